/**
 * Every Kubernetes manifest decom ships (deploy/*.yaml) and every one its README shows
 * (a YAML code block whose documents carry apiVersion and kind; decom's own decom/v1
 * playbooks and inventories are not Kubernetes objects) is checked against the API of
 * each Kubernetes minor decom supports: each apiVersion and kind served, each field
 * known (unknown ones refused, as `kubectl apply --validate=strict` refuses them) and
 * of its type. Required fields and enum values are not in the models, so not checked.
 *
 * The schemas are those of the official JavaScript client, @kubernetes/client-node: each
 * release is generated from one Kubernetes release's published OpenAPI spec, and its
 * models list every field of every type (attributeTypeMap). One alias per minor, pinned
 * in package.json; the first test of each minor proves the mapping from the generated
 * files' own header. No client release was generated from 1.31's spec (0.22.x is 1.30,
 * 1.0.x is 1.32), so 1.31 is bracketed, not checked. Nothing here touches the network.
 *
 * Why not kubernetes-models, the npm package of per-release validators: its compiled
 * validators let unknown fields through with no option to refuse them, its releases
 * jump from Kubernetes 1.27 (4.4.x) to 1.33 (4.5.x) and 1.35 (5.x, Node 22 only), and
 * each merges in the definitions of older releases.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';

const ROOT = join(import.meta.dirname, '..', '..');
const CHECKOUT = join(ROOT, '..', '..');

/** The minors checked, each with the alias (package.json) of the client generated from it. */
const VERSIONS = [
  { k8s: '1.29', pkg: 'kubernetes-client-node-1.29' }, // @kubernetes/client-node 0.21.0: release-1.29
  { k8s: '1.30', pkg: 'kubernetes-client-node-1.30' }, // 0.22.3: release-1.30
  { k8s: '1.32', pkg: 'kubernetes-client-node-1.32' }, // 1.1.2: v1.32.0
  { k8s: '1.33', pkg: 'kubernetes-client-node-1.33' }, // 1.3.0: v1.33.0
  { k8s: '1.34', pkg: 'kubernetes-client-node-1.34' }, // 1.4.0: v1.34.0
];

type Attr = { name: string; baseName: string; type: string; format?: string };
type Model = { getAttributeTypeMap(): Attr[] };
type Obj = Record<string, unknown>;

interface Manifest {
  name: string; // FILE#LINE Kind namespace/name
  doc: Obj;
}

// ---------------------------------------------------------------- the manifests

/** YAML as kubectl reads it (sigs.k8s.io/yaml: YAML 1.1, so 0440 is octal, yes a boolean). */
function yamlDocs(text: string, where: string, firstLine = 1): { line: number; value: unknown }[] {
  const lineOf = (offset: number) => firstLine + text.slice(0, offset).split('\n').length - 1;
  return parseAllDocuments(text, { version: '1.1' }).flatMap((d) => {
    if (d.errors.length > 0) throw new Error(`${where}: ${d.errors[0]!.message}`);
    const value: unknown = d.toJS();
    return value == null ? [] : [{ line: lineOf(d.contents?.range?.[0] ?? 0), value }];
  });
}

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const isManifest = (v: unknown): v is Obj =>
  isObj(v) && typeof v.apiVersion === 'string' && typeof v.kind === 'string' && !v.apiVersion.startsWith('decom/');

function label(file: string, line: number, doc: Obj): string {
  const meta = isObj(doc.metadata) ? doc.metadata : {};
  const ns = typeof meta.namespace === 'string' ? `${meta.namespace}/` : '';
  return `${file}#${line} ${String(doc.kind)} ${ns}${String(meta.name)}`;
}

function deployManifests(): Manifest[] {
  const dir = join(ROOT, 'deploy');
  return readdirSync(dir)
    .filter((f) => /\.ya?ml$/.test(f))
    .sort()
    .flatMap((f) =>
      yamlDocs(readFileSync(join(dir, f), 'utf8'), `deploy/${f}`).map(({ line, value }) => {
        // Everything in deploy/ is for kubectl: a document that is no manifest is an error.
        if (!isManifest(value)) throw new Error(`deploy/${f}#${line}: no apiVersion and kind`);
        return { name: label(`deploy/${f}`, line, value), doc: value };
      }),
    );
}

/** Markdown code blocks, fenced (``` or ~~~) or indented (4 spaces after a blank line), with their first line. */
function codeBlocks(markdown: string): { line: number; text: string }[] {
  const lines = markdown.split('\n');
  const blocks: { line: number; text: string }[] = [];
  for (let i = 0; i < lines.length; i++) {
    const fence = /^ {0,3}(`{3,}|~{3,})/.exec(lines[i]!);
    if (fence) {
      const close = new RegExp(`^ {0,3}${fence[1]![0]}{${fence[1]!.length},}\\s*$`);
      const start = i + 1;
      while (++i < lines.length && !close.test(lines[i]!));
      blocks.push({ line: start + 1, text: lines.slice(start, i).join('\n') });
    } else if (/^ {4}/.test(lines[i]!) && lines[i]!.trim() !== '' && (i === 0 || lines[i - 1]!.trim() === '')) {
      const start = i;
      while (i + 1 < lines.length && (/^ {4}/.test(lines[i + 1]!) || lines[i + 1]!.trim() === '')) i++;
      blocks.push({ line: start + 1, text: lines.slice(start, i + 1).map((l) => l.slice(4)).join('\n') });
    }
  }
  return blocks;
}

function readmeManifests(): Manifest[] {
  return codeBlocks(readFileSync(join(CHECKOUT, 'README.md'), 'utf8')).flatMap(({ line, text }) => {
    let docs: { line: number; value: unknown }[];
    try {
      docs = yamlDocs(text, `README.md:${line}`, line);
    } catch {
      return []; // a shell session, a table of output: not YAML
    }
    return docs.filter((d) => isManifest(d.value)).map((d) => ({ name: label('README.md', d.line, d.value as Obj), doc: d.value as Obj }));
  });
}

const DEPLOY = deployManifests();
const README = readmeManifests();
const MANIFESTS = [...DEPLOY, ...README];

// ---------------------------------------------------------------- the check

interface Schema {
  k8s: string;
  models: Record<string, unknown>;
  /** The Kubernetes version in the header of a model's generated file. */
  specOf(model: string): string | undefined;
  /** The model of an apiVersion and kind that this version's API serves. */
  served(apiVersion: string, kind: string): string | undefined;
}

const specVersion = (text: string) => /(?:OpenAPI spec version|version of the OpenAPI document): (?:release-|v)(\d+\.\d+)/.exec(text)?.[1];

async function loadSchema(k8s: string, pkg: string): Promise<Schema> {
  const dir = join(CHECKOUT, 'node_modules', pkg, 'dist', 'gen');
  // 0.x (CommonJS) keeps its models in model/v1PodSpec.js, 1.x (ESM) in models/V1PodSpec.js.
  const old = existsSync(join(dir, 'model'));
  const spec: string = `${pkg}/dist/gen/${old ? 'model/models.js' : 'models/all.js'}`;
  const mod = (await import(spec)) as Obj;
  const models = { ...(isObj(mod.default) ? mod.default : {}), ...mod };
  // The API classes: their request paths name the group and version, their answers the model.
  const apiDir = join(dir, old ? 'api' : 'apis');
  const apis = readdirSync(apiDir)
    .filter((f) => f.endsWith('.js'))
    .map((f) => readFileSync(join(apiDir, f), 'utf8'));
  const specOf = (model: string) => {
    const file = old ? join(dir, 'model', `${model[0]!.toLowerCase()}${model.slice(1)}.js`) : join(dir, 'models', `${model}.js`);
    return existsSync(file) ? specVersion(readFileSync(file, 'utf8')) : undefined;
  };
  return {
    k8s,
    models,
    specOf,
    served(apiVersion, kind) {
      const path = apiVersion.includes('/') ? `'/apis/${apiVersion}/` : `'/api/${apiVersion}/`;
      // A 1.x release also keeps the files of the APIs its Kubernetes removed (1.32's
      // resource.k8s.io/v1alpha2, from 1.30): a model of another version is not served.
      return modelNames(apiVersion, kind).find(
        (name) => models[name] !== undefined && specOf(name) === k8s && apis.some((t) => t.includes(path) && t.includes(`"${name}"`)),
      );
    },
  };
}

/** V1CronJob for batch/v1 CronJob; the group's prefix first, for a kind two groups share (CoreV1Event). */
function modelNames(apiVersion: string, kind: string): string[] {
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['core', apiVersion];
  const v = version!.charAt(0).toUpperCase() + version!.slice(1);
  const g = group!.split('.')[0]!;
  return [`${g.charAt(0).toUpperCase()}${g.slice(1)}${v}${kind}`, `${v}${kind}`];
}

interface Result {
  errors: string[];
  /** Every key matched against a field of the schema, as a path. */
  fields: string[];
}

/**
 * The object against the schema of its apiVersion and kind. Unknown fields are refused
 * at every level of a typed object; maps (labels, resources), `any` (RawExtension,
 * JSON) and IntOrString stay as open as the API has them. A string field takes a
 * string only: Quantity is `type: string` in the published spec, so write "1", not 1.
 */
function validate(schema: Schema, doc: Obj): Result {
  const out: Result = { errors: [], fields: [] };
  const [apiVersion, kind] = [String(doc.apiVersion), String(doc.kind)];
  const name = schema.served(apiVersion, kind);
  if (name === undefined) {
    out.errors.push(`${apiVersion} ${kind} is not served by Kubernetes ${schema.k8s}`);
    return out;
  }
  check(schema, name, doc, '', out);
  return out;
}

function check(schema: Schema, type: string, value: unknown, path: string, out: Result): void {
  const at = path === '' ? '.' : path;
  const want = (what: string): void => {
    out.errors.push(`${at}: want ${what}, got ${Array.isArray(value) ? 'array' : typeof value}`);
  };
  if (value === null || value === undefined) return; // an optional field left empty
  let m: RegExpExecArray | null;
  if (type === 'any' || type === 'object') return;
  if (type === 'string' || type === 'Date' || type === 'V1MicroTime') {
    if (typeof value !== 'string') want('string');
  } else if (type === 'number') {
    if (typeof value !== 'number') want('number');
  } else if (type === 'boolean') {
    if (typeof value !== 'boolean') want('boolean');
  } else if (type === 'IntOrString') {
    if (typeof value !== 'string' && typeof value !== 'number') want('integer or string');
  } else if ((m = /^Array<(.+)>$/.exec(type))) {
    if (!Array.isArray(value)) return want('array');
    value.forEach((item, i) => check(schema, m![1]!, item, `${path}[${i}]`, out));
  } else if ((m = /^\{ \[key: string\]: (.+); \}$/.exec(type))) {
    if (!isObj(value)) return want('map');
    for (const [k, v] of Object.entries(value)) check(schema, m[1]!, v, `${path}[${JSON.stringify(k)}]`, out);
  } else {
    const model = schema.models[type] as Model | undefined;
    if (typeof model?.getAttributeTypeMap !== 'function') throw new Error(`Kubernetes ${schema.k8s}: no type ${type} in the client's models`);
    if (!isObj(value)) return want(`object (${type})`);
    const attrs = new Map(model.getAttributeTypeMap().map((a) => [a.baseName, a]));
    for (const [k, v] of Object.entries(value)) {
      const p = path === '' ? k : `${path}.${k}`;
      const attr = attrs.get(k);
      if (attr === undefined) {
        out.errors.push(`unknown field "${p}" (${type} has no such field)`);
        continue;
      }
      out.fields.push(p);
      check(schema, attr.type, v, p, out);
    }
  }
}

// ---------------------------------------------------------------- mutations

const clone = <T>(v: T): T => structuredClone(v);

/** The object holding PATH's last key, and that key ("a.b[0].c" → b[0], "c"). */
function parentOf(doc: Obj, path: string): [Obj, string] {
  const parts = path.match(/[^.[\]]+/g)!;
  let cur: unknown = doc;
  for (const p of parts.slice(0, -1)) cur = (cur as Obj)[p];
  return [cur as Obj, parts.at(-1)!];
}

/** Renames the field at PATH, keeping its place among its siblings. */
function rename(doc: Obj, path: string, to: string): Obj {
  const copy = clone(doc);
  const [parent, key] = parentOf(copy, path);
  if (!(key in parent)) throw new Error(`no ${path} to rename`);
  const entries = Object.entries(parent).map(([k, v]) => [k === key ? to : k, v] as const);
  for (const k of Object.keys(parent)) delete parent[k];
  Object.assign(parent, Object.fromEntries(entries));
  return copy;
}

function set(doc: Obj, path: string, value: unknown): Obj {
  const copy = clone(doc);
  const [parent, key] = parentOf(copy, path);
  parent[key] = value;
  return copy;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const depth = (path: string) => (path.match(/[.[]/g) ?? []).length;

// ---------------------------------------------------------------- the tests

describe('manifests found', () => {
  it('deploy/ has the CronJob and the DaemonSet, README at least one example', () => {
    expect(DEPLOY.map((m) => m.doc.kind)).toEqual(expect.arrayContaining(['CronJob', 'DaemonSet', 'ClusterRole']));
    // A broken extractor must not pass vacuously.
    expect(README.length).toBeGreaterThan(0);
    expect(README.map((m) => m.name)).toContainEqual(expect.stringMatching(/^README\.md#\d+ ClusterRole decom-decommission$/));
  });

  it('the README extractor reads fenced and indented blocks, and skips decom/v1 documents', () => {
    const md = 'text\n\n    apiVersion: v1\n    kind: ConfigMap\n\n```yaml\napiVersion: decom/v1\nkind: Playbook\n---\napiVersion: apps/v1\nkind: Deployment\n```\n';
    expect(codeBlocks(md).map((b) => b.line)).toEqual([3, 7]);
    const docs = codeBlocks(md).flatMap((b) => yamlDocs(b.text, 'md', b.line)).filter((d) => isManifest(d.value));
    expect(docs.map((d) => [(d.value as Obj).kind, d.line])).toEqual([['ConfigMap', 3], ['Deployment', 10]]);
  });
});

for (const { k8s, pkg } of VERSIONS) describe(`Kubernetes ${k8s} (${pkg})`, () => {
  let schema: Schema;
  beforeAll(async () => {
    schema = await loadSchema(k8s, pkg);
  });

  it(`is the client generated from Kubernetes ${k8s}'s OpenAPI spec`, () => {
    for (const model of ['V1PodSpec', 'V1JobSpec', 'V1CronJob', 'V1DaemonSet', 'V1ClusterRole', 'V1ObjectMeta']) expect(schema.specOf(model), model).toBe(k8s);
  });

  for (const { name, doc } of MANIFESTS) {
    it(`${name} is valid`, () => {
      expect(validate(schema, doc).errors).toEqual([]);
    });
  }

  for (const { name, doc } of MANIFESTS) {
    it(`${name} with its deepest field misspelled is refused, naming it`, () => {
      const { fields } = validate(schema, doc);
      const path = fields.reduce((a, b) => (depth(b) > depth(a) ? b : a));
      const key = path.match(/[^.[\]]+$/)![0];
      const typo = `${path.slice(0, -key.length)}${key.slice(0, -1)}`;
      const { errors } = validate(schema, rename(doc, path, key.slice(0, -1)));
      expect(errors).toEqual([expect.stringMatching(new RegExp(`^unknown field "${escape(typo)}" \\(\\w+ has no such field\\)$`))]);
    });
  }

  const cronJob = () => DEPLOY.find((m) => m.doc.kind === 'CronJob')!.doc;
  const daemonSet = () => DEPLOY.find((m) => m.doc.kind === 'DaemonSet')!.doc;

  it('refuses the misspellings that a careless edit makes, naming each field', () => {
    const cases: [Obj, string][] = [
      [rename(cronJob(), 'spec.jobTemplate.spec.completionMode', 'completionMod'), 'spec.jobTemplate.spec.completionMod'],
      [set(cronJob(), 'spec.jobTemplate.spec.template.spec.containers[0].imagePullPolicyy', 'IfNotPresent'), 'spec.jobTemplate.spec.template.spec.containers[0].imagePullPolicyy'],
      [rename(daemonSet(), 'spec.template.spec.hostPID', 'hostPid'), 'spec.template.spec.hostPid'],
      [set(daemonSet(), 'spec.template.spec.volumes[0].hostPath.readOnly', true), 'spec.template.spec.volumes[0].hostPath.readOnly'],
      [set(daemonSet(), 'metadata.label', {}), 'metadata.label'],
    ];
    for (const [doc, field] of cases) {
      const { errors } = validate(schema, doc);
      expect(errors).toHaveLength(1);
      expect(errors[0]).toMatch(new RegExp(`^unknown field "${escape(field)}" \\(V1\\w+ has no such field\\)$`));
    }
  });

  it('refuses a wrong type and an API version no longer served', () => {
    expect(validate(schema, set(cronJob(), 'spec.jobTemplate.spec.completions', '3')).errors).toEqual(['spec.jobTemplate.spec.completions: want number, got string']);
    expect(validate(schema, set(daemonSet(), 'spec.template.spec.hostPID', 'true')).errors).toEqual(['spec.template.spec.hostPID: want boolean, got string']);
    expect(validate(schema, set(cronJob(), 'apiVersion', 'batch/v1beta1')).errors).toEqual([`batch/v1beta1 CronJob is not served by Kubernetes ${k8s}`]);
    expect(validate(schema, set(daemonSet(), 'apiVersion', 'example.com/v1')).errors).toEqual([`example.com/v1 DaemonSet is not served by Kubernetes ${k8s}`]);
  });

  // Job's managedBy came in 1.30: the minors are told apart.
  const before130 = Number(k8s.split('.')[1]) < 30;
  it(`${before130 ? 'refuses' : 'takes'} spec.jobTemplate.spec.managedBy (new in 1.30)`, () => {
    const { errors } = validate(schema, set(cronJob(), 'spec.jobTemplate.spec.managedBy', 'kueue.x-k8s.io/multikueue'));
    if (before130) expect(errors).toEqual(['unknown field "spec.jobTemplate.spec.managedBy" (V1JobSpec has no such field)']);
    else expect(errors).toEqual([]);
  });
});
