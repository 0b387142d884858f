/** Failures as a real API server answers them: a `Status` object with its HTTP code and reason. */
export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: { name?: string; group?: string; kind?: string; causes?: { reason?: string; message: string; field?: string }[]; retryAfterSeconds?: number },
  ) {
    super(message);
  }

  static notFound(resource: string, name: string, group = ''): ApiError {
    return new ApiError(404, 'NotFound', `${group ? `${resource}.${group}` : resource} "${name}" not found`, { name, group, kind: resource });
  }

  static alreadyExists(resource: string, name: string, group = ''): ApiError {
    return new ApiError(409, 'AlreadyExists', `${group ? `${resource}.${group}` : resource} "${name}" already exists`, { name, group, kind: resource });
  }

  static conflict(resource: string, name: string, group: string, why: string): ApiError {
    return new ApiError(409, 'Conflict', `Operation cannot be fulfilled on ${group ? `${resource}.${group}` : resource} "${name}": ${why}`, { name, group, kind: resource });
  }

  static invalid(kind: string, name: string, group: string, causes: { field: string; message: string }[]): ApiError {
    const text = causes.map((c) => `${c.field}: ${c.message}`).join(', ');
    // errors.NewInvalid names the qualified kind (GroupKind.String(): "Job.batch"); the core group's is the bare kind.
    return new ApiError(422, 'Invalid', `${group ? `${kind}.${group}` : kind} "${name}" is invalid: ${text}`, {
      name,
      group,
      kind,
      causes: causes.map((c) => ({ reason: 'FieldValueInvalid', message: c.message, field: c.field })),
    });
  }

  static badRequest(message: string): ApiError {
    return new ApiError(400, 'BadRequest', message);
  }

  status(): Record<string, unknown> {
    return {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.message,
      ...(this.reason ? { reason: this.reason } : {}),
      ...(this.details ? { details: this.details } : {}),
      code: this.code,
    };
  }
}
