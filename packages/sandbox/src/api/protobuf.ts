/**
 * Request bodies in Kubernetes' protobuf encoding: kubectl's typed clients send them
 * (`kubectl create namespace`, `create job`, drain's evictions and pod deletes, `create
 * token`) and do not fall back to JSON on a 415. The envelope is `k8s\0` +
 * runtime.Unknown{typeMeta, raw}; the raw object is decoded by the messages of
 * protobuf-schema.ts into the JSON object it stands for.
 *
 * A field the schema does not know is a 415 naming the message and the field number,
 * never dropped: the sandbox must not run an object different from the one sent.
 */
import { ApiError } from './errors.js';
import { KINDS, RUNTIME_TYPE_META, type Kind, type Msg } from './protobuf-schema.js';

type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

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

/** Wire-format fields of one message: number, wire type, and the value (varint or bytes; fixed ones as bytes). */
function fields(buf: Buffer): { no: number; wire: number; value: bigint | Buffer }[] {
  const out: { no: number; wire: number; value: bigint | Buffer }[] = [];
  let pos = 0;
  while (pos < buf.length) {
    const [tag, p1] = varint(buf, pos);
    const no = Number(tag >> 3n);
    const wire = Number(tag & 7n);
    let value: bigint | Buffer;
    if (wire === 0) [value, pos] = varint(buf, p1);
    else if (wire === 2) {
      const [len, p2] = varint(buf, p1);
      pos = p2 + Number(len);
      if (pos > buf.length) throw ApiError.badRequest('the protobuf body ends inside a field');
      value = buf.subarray(p2, pos);
    } else if (wire === 1 || wire === 5) {
      pos = p1 + (wire === 1 ? 8 : 4);
      value = buf.subarray(p1, pos);
    } else throw ApiError.badRequest(`the protobuf body has a field of wire type ${wire}`);
    out.push({ no, wire, value });
  }
  return out;
}

const int = (v: bigint) => Number(BigInt.asIntN(64, v));
const text = (v: Buffer) => v.toString('utf8');
/** A map entry or a Quantity: the string fields of a small message by number. */
const strings = (v: Buffer): Record<number, string> => Object.fromEntries(fields(v).map((f) => [f.no, Buffer.isBuffer(f.value) ? text(f.value) : String(f.value)]));

/** meta/v1 Time {seconds=1, nanos=2} in RFC 3339 (whole seconds, as the API writes it); the zero Time is undefined. */
function time(v: Buffer): string | undefined {
  const seconds = fields(v).find((f) => f.no === 1)?.value;
  return typeof seconds === 'bigint' ? new Date(int(seconds) * 1000).toISOString().replace(/\.\d+Z$/, 'Z') : undefined;
}

/** IntOrString {type=1 (0 int, 1 string), intVal=2, strVal=3}. */
function intOrString(v: Buffer): number | string {
  const f = new Map(fields(v).map((x) => [x.no, x.value]));
  return f.get(1) === 1n ? text((f.get(3) as Buffer | undefined) ?? Buffer.alloc(0)) : int((f.get(2) as bigint | undefined) ?? 0n);
}

/** Repeated varints, packed (one length-delimited field) or not. */
function ints(value: bigint | Buffer): number[] {
  if (typeof value === 'bigint') return [int(value)];
  const out: number[] = [];
  for (let pos = 0; pos < value.length; ) {
    const [v, next] = varint(value, pos);
    out.push(int(v));
    pos = next;
  }
  return out;
}

function decode(buf: Buffer, m: Msg, out: Any = {}): Any {
  for (const { no, wire, value } of fields(buf)) {
    const f = m.fields[no];
    if (!f) throw new ApiError(415, 'UnsupportedMediaType', `the sandbox API does not know field ${no} of ${m.name} in this protobuf body (it would drop it): send application/json`);
    const [name, kind] = f;
    const expected = typeof kind === 'string' && /^[ib]\??$/.test(kind) ? 0 : kind === 'is' ? wire : 2;
    if (wire !== expected) throw ApiError.badRequest(`field ${no} of ${m.name} has wire type ${wire} in this protobuf body`);
    read(out, name, kind, value);
  }
  return out;
}

/** Sets one decoded field on `out` as JSON has it. */
function read(out: Any, name: string, kind: Kind, value: bigint | Buffer): void {
  const bytes = value as Buffer;
  switch (kind) {
    case 's': if (bytes.length) out[name] = text(bytes); return;
    case 's?': out[name] = text(bytes); return;
    case 'i': if (value !== 0n) out[name] = int(value as bigint); return;
    case 'i?': out[name] = int(value as bigint); return;
    case 'b': if (value !== 0n) out[name] = true; return;
    case 'b?': out[name] = value !== 0n; return;
    case 'ss': (out[name] ??= []).push(text(bytes)); return;
    case 'is': (out[name] ??= []).push(...ints(value)); return;
    case 'q': out[name] = strings(bytes)[1] ?? '0'; return;
    case 'ios': out[name] = intOrString(bytes); return;
    case 'json': out[name] = JSON.parse(strings(bytes)[1] ?? '{}'); return;
    case 'time': {
      const t = time(bytes);
      if (t !== undefined) out[name] = t;
      return;
    }
    case 'map':
    case 'bmap':
    case 'qmap': {
      // A map is a repeated entry message {key=1, value=2}; a Quantity value is a message {string=1}.
      const e = fields(bytes);
      const k = e.find((x) => x.no === 1)?.value as Buffer | undefined;
      const v = e.find((x) => x.no === 2)?.value as Buffer | undefined;
      const bytesValue = v ?? Buffer.alloc(0);
      (out[name] ??= {})[k ? text(k) : ''] = kind === 'map' ? text(bytesValue) : kind === 'bmap' ? bytesValue.toString('base64') : (strings(bytesValue)[1] ?? '0');
      return;
    }
  }
  if ('list' in kind) (out[name] ??= []).push(decode(bytes, kind.list));
  else if ('inline' in kind) decode(bytes, kind.inline, out);
  else out[name] = decode(bytes, kind, out[name] ?? {});
}

/** A protobuf request body as the JSON object it stands for. */
export function decodeProtobuf(body: Buffer): Any {
  if (body.length < 4 || body.subarray(0, 4).toString('latin1') !== 'k8s\0') throw ApiError.badRequest('the protobuf body has no k8s envelope');
  const envelope = fields(body.subarray(4));
  const typeMeta = envelope.find((f) => f.no === 1)?.value;
  const raw = envelope.find((f) => f.no === 2)?.value;
  const { apiVersion, kind } = Buffer.isBuffer(typeMeta) ? decode(typeMeta, RUNTIME_TYPE_META) : ({} as Any);
  const schema = kind ? KINDS[kind] : undefined;
  if (!schema || !Buffer.isBuffer(raw)) {
    throw new ApiError(415, 'UnsupportedMediaType', `the sandbox API reads protobuf bodies of ${Object.keys(KINDS).join(', ')} only, not ${kind ?? 'this one'}: send application/json`);
  }
  return { apiVersion, kind, ...decode(raw, schema) };
}
