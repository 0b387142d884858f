/**
 * Request bodies in Kubernetes' protobuf encoding: kubectl's typed clients send them
 * (`kubectl create namespace`, drain's evictions and pod deletes, `create token`) and do not fall back
 * to JSON on a 415. The envelope is `k8s\0` + runtime.Unknown{typeMeta, raw}; the raw
 * object is decoded for the few kinds those clients send, by their field numbers in
 * k8s.io/api's generated.proto. Anything else is a 415, named.
 */
import { ApiError } from './errors.js';

type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Fields of one message: number → [name, how to read it]. */
type Schema = Record<number, [string, Reader]>;
type Reader = 'string' | 'int' | 'bool' | 'strings' | 'map' | Schema | { repeated: Schema };

const TYPE_META: Schema = { 1: ['apiVersion', 'string'], 2: ['kind', 'string'] };
const TIME: Schema = { 1: ['seconds', 'int'], 2: ['nanos', 'int'] };
const OWNER: Schema = { 1: ['kind', 'string'], 3: ['name', 'string'], 4: ['uid', 'string'], 5: ['apiVersion', 'string'], 6: ['controller', 'bool'], 7: ['blockOwnerDeletion', 'bool'] };
const OBJECT_META: Schema = {
  1: ['name', 'string'], 2: ['generateName', 'string'], 3: ['namespace', 'string'], 5: ['uid', 'string'], 6: ['resourceVersion', 'string'],
  7: ['generation', 'int'], 8: ['creationTimestamp', TIME], 9: ['deletionTimestamp', TIME], 10: ['deletionGracePeriodSeconds', 'int'],
  11: ['labels', 'map'], 12: ['annotations', 'map'], 13: ['ownerReferences', { repeated: OWNER }], 14: ['finalizers', 'strings'],
};
const PRECONDITIONS: Schema = { 1: ['uid', 'string'], 2: ['resourceVersion', 'string'] };
const DELETE_OPTIONS: Schema = { 1: ['gracePeriodSeconds', 'int'], 2: ['preconditions', PRECONDITIONS], 3: ['orphanDependents', 'bool'], 4: ['propagationPolicy', 'string'], 5: ['dryRun', 'strings'] };

/** The kinds kubectl's typed clients send bodies of. */
const KINDS: Record<string, Schema> = {
  Namespace: { 1: ['metadata', OBJECT_META], 2: ['spec', { 1: ['finalizers', 'strings'] }] },
  Eviction: { 1: ['metadata', OBJECT_META], 2: ['deleteOptions', DELETE_OPTIONS] },
  DeleteOptions: DELETE_OPTIONS,
  // `kubectl create token` (authentication/v1 TokenRequestSpec: audiences 1, boundObjectRef 3, expirationSeconds 4).
  TokenRequest: { 1: ['metadata', OBJECT_META], 2: ['spec', { 1: ['audiences', 'strings'], 4: ['expirationSeconds', 'int'] }] },
};

function varint(buf: Buffer, pos: number): [bigint, number] {
  let result = 0n;
  let shift = 0n;
  for (;;) {
    if (pos >= buf.length) throw ApiError.badRequest('the protobuf body ends inside a varint');
    const b = buf[pos++] as number;
    result |= BigInt(b & 0x7f) << shift;
    if (!(b & 0x80)) return [result, pos];
    shift += 7n;
  }
}

/** Wire-format fields of one message: number, wire type, and the value (varint or bytes). */
function fields(buf: Buffer): { no: number; value: bigint | Buffer }[] {
  const out: { no: number; value: bigint | Buffer }[] = [];
  let pos = 0;
  while (pos < buf.length) {
    const [tag, p1] = varint(buf, pos);
    const no = Number(tag >> 3n);
    const wire = Number(tag & 7n);
    if (wire === 0) {
      const [v, p2] = varint(buf, p1);
      out.push({ no, value: v });
      pos = p2;
    } else if (wire === 2) {
      const [len, p2] = varint(buf, p1);
      out.push({ no, value: buf.subarray(p2, p2 + Number(len)) });
      pos = p2 + Number(len);
    } else if (wire === 1) pos = p1 + 8;
    else if (wire === 5) pos = p1 + 4;
    else throw ApiError.badRequest(`the protobuf body has a field of wire type ${wire}`);
  }
  return out;
}

function decode(buf: Buffer, schema: Schema): Any {
  const out: Any = {};
  for (const { no, value } of fields(buf)) {
    const f = schema[no];
    if (!f) continue;
    const [name, how] = f;
    if (how === 'string') out[name] = (value as Buffer).toString('utf8');
    else if (how === 'int') out[name] = Number(BigInt.asIntN(64, value as bigint));
    else if (how === 'bool') out[name] = value !== 0n;
    else if (how === 'strings') (out[name] ??= []).push((value as Buffer).toString('utf8'));
    else if (how === 'map') {
      const e = decode(value as Buffer, { 1: ['k', 'string'], 2: ['v', 'string'] });
      (out[name] ??= {})[e.k ?? ''] = e.v ?? '';
    } else if ('repeated' in how) (out[name] ??= []).push(decode(value as Buffer, how.repeated as Schema));
    else out[name] = decode(value as Buffer, how as Schema);
  }
  for (const [k, v] of Object.entries(out)) {
    if (v && typeof v === 'object' && 'seconds' in v) out[k] = new Date(Number(v.seconds) * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
  }
  return out;
}

/** A protobuf request body as the JSON object it stands for. */
export function decodeProtobuf(body: Buffer): Any {
  if (body.length < 4 || body.subarray(0, 4).toString('latin1') !== 'k8s\0') throw ApiError.badRequest('the protobuf body has no k8s envelope');
  const unknown = decode(body.subarray(4), { 1: ['typeMeta', TYPE_META], 2: ['raw', 'string'] });
  const raw = fields(body.subarray(4)).find((f) => f.no === 2)?.value as Buffer | undefined;
  const { apiVersion, kind } = (unknown.typeMeta ?? {}) as { apiVersion?: string; kind?: string };
  const schema = kind ? KINDS[kind] : undefined;
  if (!schema || !raw) {
    throw new ApiError(415, 'UnsupportedMediaType', `the sandbox API reads protobuf bodies of ${Object.keys(KINDS).join(', ')} only, not ${kind ?? 'this one'}: send application/json`);
  }
  return { apiVersion, kind, ...decode(raw, schema) };
}
