/**
 * The sandbox API's object store: every object by resource, namespace and name, one
 * resourceVersion counter for all (as etcd's revision), saved to a JSON file so the
 * objects survive a restart of the API. Objects are kept by resource: a built-in's
 * plural, or a custom resource's PLURAL.GROUP (resources.ts storeKey), whose errors
 * name the plural and group as the real server's. Metadata behaves as a real API
 * server's: uid, resourceVersion, generation (bumped when the spec changes),
 * creationTimestamp, and deletion with finalizers (deletionTimestamp set, the object
 * kept until the last finalizer goes).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { ApiError } from './errors.js';

export interface Meta {
  name: string;
  generateName?: string;
  namespace?: string;
  uid: string;
  resourceVersion: string;
  generation?: number;
  creationTimestamp: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean; blockOwnerDeletion?: boolean }[];
  [k: string]: unknown;
}

export interface Obj {
  apiVersion: string;
  kind: string;
  metadata: Meta;
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
  [k: string]: unknown;
}

export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';
export interface WatchEvent {
  type: EventType;
  resource: string;
  object: Obj;
  /** The object before a MODIFIED: a watch with a selector turns a change of match into ADDED or DELETED. */
  old?: Obj;
}

const key = (resource: string, ns: string | undefined, name: string) => `${resource}/${ns ?? ''}/${name}`;
/** The plural an error names: a custom resource's key is PLURAL.GROUP, the group named on its own. */
const pluralOf = (resource: string) => resource.split('.')[0] as string;
/** A metav1.Time: RFC 3339 in whole seconds, as the API server writes timestamps. */
export const rfc3339 = (ms = Date.now()): string => new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
/** A metav1.MicroTime (an audit event's timestamps): RFC 3339 with microseconds. */
export function microTime(): string {
  const t = performance.timeOrigin + performance.now();
  const ms = Math.floor(t);
  return new Date(ms).toISOString().replace(/Z$/, `${String(Math.floor((t - ms) * 1000)).padStart(3, '0')}Z`);
}
/** How long writes gather before the file is written (saving is O(objects): once per write made seeding quadratic). */
const SAVE_DELAY_MS = 100;
const now = () => rfc3339();
const clone = <T>(x: T): T => structuredClone(x);
/** apimachinery's rand.String: 5 characters without vowels or look-alikes. */
const ALPHANUMS = 'bcdfghjklmnpqrstvwxz2456789';
export const suffix = () => Array.from(randomBytes(5), (b) => ALPHANUMS[b % ALPHANUMS.length]).join('');
/** A name from generateName, as the server makes it (the prefix and five random characters). */
export const generatedName = (prefix: string): string => `${prefix}${suffix()}`;

export class Store {
  private rv = 1;
  private objects = new Map<string, { resource: string; obj: Obj }>();
  private watchers = new Set<(e: WatchEvent) => void>();
  /** Events kept for watches that start from an older resourceVersion. */
  private history: (WatchEvent & { rv: number })[] = [];

  constructor(private readonly file?: string) {
    if (file && existsSync(file)) {
      const saved = JSON.parse(readFileSync(file, 'utf8')) as { rv: number; objects: { resource: string; obj: Obj }[] };
      this.rv = saved.rv;
      for (const o of saved.objects) this.objects.set(key(o.resource, o.obj.metadata.namespace, o.obj.metadata.name), o);
    }
  }

  get resourceVersion(): string {
    return String(this.rv);
  }

  private saving?: NodeJS.Timeout;

  /**
   * Marks the store changed: the file is written once the writes of the next
   * SAVE_DELAY_MS are in, atomically, so it always holds a whole state; a crash loses
   * at most that interval's writes (a stop flushes first).
   */
  private save(): void {
    if (!this.file || this.saving) return;
    this.saving = setTimeout(() => this.flush(), SAVE_DELAY_MS);
    this.saving.unref();
  }

  /** Writes the file now if anything changed since it was last written. */
  flush(): void {
    if (!this.file || !this.saving) return;
    clearTimeout(this.saving);
    this.saving = undefined;
    const tmp = `${this.file}.tmp`;
    writeFileSync(tmp, JSON.stringify({ rv: this.rv, objects: [...this.objects.values()] }), { mode: 0o600 });
    renameSync(tmp, this.file);
  }

  private emit(type: EventType, resource: string, obj: Obj, old?: Obj): void {
    const e = { type, resource, object: clone(obj), ...(old ? { old: clone(old) } : {}) };
    this.history.push({ ...e, rv: this.rv });
    if (this.history.length > 5000) this.history.splice(0, 1000);
    for (const w of this.watchers) w(e);
  }

  watch(fn: (e: WatchEvent) => void): () => void {
    this.watchers.add(fn);
    return () => this.watchers.delete(fn);
  }

  /** Events after resourceVersion `since`, or undefined when they are no longer kept (410 Gone). */
  since(since: number): WatchEvent[] | undefined {
    if (since >= this.rv) return [];
    const first = this.history[0];
    if (!first || first.rv > since + 1) return since === this.rv ? [] : undefined;
    return this.history.filter((e) => e.rv > since).map(({ rv: _, ...e }) => e); // `old` kept: a resumed watch with a selector needs it
  }

  list(resource: string, ns?: string): Obj[] {
    const out: Obj[] = [];
    for (const o of this.objects.values()) {
      if (o.resource === resource && (ns === undefined || o.obj.metadata.namespace === ns)) out.push(clone(o.obj));
    }
    return out.sort((a, b) => `${a.metadata.namespace ?? ''}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace ?? ''}/${b.metadata.name}`));
  }

  find(resource: string, ns: string | undefined, name: string): Obj | undefined {
    const o = this.objects.get(key(resource, ns, name));
    return o ? clone(o.obj) : undefined;
  }

  get(resource: string, ns: string | undefined, name: string, group: string): Obj {
    const o = this.find(resource, ns, name);
    if (!o) throw ApiError.notFound(pluralOf(resource), name, group);
    return o;
  }

  /** Mutating admission: every create passes it, the API's and the controllers' alike (it may change the object or refuse it). */
  private readonly admission: ((resource: string, obj: Obj) => void)[] = [];
  admit(plugin: (resource: string, obj: Obj) => void): void {
    this.admission.push(plugin);
  }

  create(resource: string, obj: Obj, group: string): Obj {
    const m = obj.metadata;
    if (!m.name && m.generateName) m.name = generatedName(m.generateName);
    for (const plugin of this.admission) plugin(resource, obj);
    if (this.objects.has(key(resource, m.namespace, m.name))) throw ApiError.alreadyExists(pluralOf(resource), m.name, group);
    this.rv++;
    const stored: Obj = {
      ...obj,
      metadata: {
        ...m,
        // The server's own: given here, or before (withDefaults drops a client's) when the object names it (a Job's selector).
        uid: m.uid || randomUUID(),
        resourceVersion: String(this.rv),
        creationTimestamp: now(),
        ...(obj.spec !== undefined ? { generation: 1 } : {}),
      },
    };
    delete stored.metadata.deletionTimestamp;
    this.objects.set(key(resource, m.namespace, m.name), { resource, obj: stored });
    this.save();
    this.emit('ADDED', resource, stored);
    return clone(stored);
  }

  /**
   * Replaces an object. A resourceVersion in `obj` must be the stored one (409 Conflict
   * otherwise); uid and creationTimestamp are the server's. An object being deleted
   * whose last finalizer goes is deleted.
   */
  update(resource: string, obj: Obj, group: string): Obj {
    const m = obj.metadata;
    const cur = this.objects.get(key(resource, m.namespace, m.name));
    if (!cur) throw ApiError.notFound(pluralOf(resource), m.name, group);
    if (m.resourceVersion && m.resourceVersion !== cur.obj.metadata.resourceVersion) {
      throw ApiError.conflict(pluralOf(resource), m.name, group, 'the object has been modified; please apply your changes to the latest version and try again');
    }
    const old = cur.obj;
    const specChanged = JSON.stringify(obj.spec) !== JSON.stringify(old.spec);
    const next: Obj = {
      ...obj,
      metadata: {
        ...m,
        uid: old.metadata.uid,
        creationTimestamp: old.metadata.creationTimestamp,
        resourceVersion: old.metadata.resourceVersion,
        ...(old.metadata.generation !== undefined ? { generation: old.metadata.generation + (specChanged ? 1 : 0) } : {}),
        // The server's own deletion fields: no write can set, clear or change them.
        deletionTimestamp: old.metadata.deletionTimestamp,
        deletionGracePeriodSeconds: old.metadata.deletionGracePeriodSeconds,
      },
    };
    if (next.metadata.deletionTimestamp === undefined) delete next.metadata.deletionTimestamp;
    if (next.metadata.deletionGracePeriodSeconds === undefined) delete next.metadata.deletionGracePeriodSeconds;
    if (!next.metadata.finalizers?.length) delete next.metadata.finalizers;
    // A write that changes nothing is no write: no new resourceVersion, no event (as etcd's guaranteed update).
    if (JSON.stringify(next) === JSON.stringify(old)) return clone(old);
    this.rv++;
    next.metadata.resourceVersion = String(this.rv);
    if (next.metadata.deletionTimestamp && !this.held(resource, next)) {
      this.objects.delete(key(resource, m.namespace, m.name));
      this.save();
      this.emit('DELETED', resource, next);
      return clone(next);
    }
    cur.obj = next;
    this.save();
    this.emit('MODIFIED', resource, next, old);
    return clone(next);
  }

  /**
   * What keeps an object being deleted: its finalizers; a namespace's spec.finalizers
   * (the namespace controller's); a pod bound to a node with a grace period, until its
   * kubelet has stopped it and finishes the delete.
   */
  private held(resource: string, o: Obj): boolean {
    if (o.metadata.finalizers?.length) return true;
    const spec = (o.spec ?? {}) as { nodeName?: string; finalizers?: string[] };
    if (resource === 'pods') return (o.metadata.deletionGracePeriodSeconds ?? 0) > 0 && Boolean(spec.nodeName);
    if (resource === 'namespaces') return (spec.finalizers ?? []).length > 0;
    return false;
  }

  /**
   * Deletes an object: at once when nothing holds it; otherwise it is marked
   * (deletionTimestamp) and stays, Terminating, until its finalizers are gone (and, for
   * a pod bound to a node with a grace period, until its kubelet finishes the delete).
   * `mark`: what the resource's own Delete does to an object it starts deleting (a
   * CRD's finalizer and condition), before it is judged held.
   */
  delete(resource: string, ns: string | undefined, name: string, group: string, opts: { gracePeriodSeconds?: number; uid?: string; resourceVersion?: string; mark?: (o: Obj) => Obj } = {}): Obj {
    const cur = this.objects.get(key(resource, ns, name));
    if (!cur) throw ApiError.notFound(pluralOf(resource), name, group);
    const o = cur.obj;
    // As the real store's Delete answers, from rest.BeforeDelete (before storage): the conflict names the kind, not the resource.
    if (opts.uid && opts.uid !== o.metadata.uid) {
      throw ApiError.conflict(o.kind, name, group, `the UID in the precondition (${opts.uid}) does not match the UID in record (${o.metadata.uid}). The object might have been deleted and then recreated`);
    }
    if (opts.resourceVersion && opts.resourceVersion !== o.metadata.resourceVersion) {
      throw ApiError.conflict(o.kind, name, group, `the ResourceVersion in the precondition (${opts.resourceVersion}) does not match the ResourceVersion in record (${o.metadata.resourceVersion}). The object might have been modified`);
    }
    // The pod strategy's CheckGracefulDelete: a pod no kubelet runs (never scheduled, or finished) goes at once.
    const podSpec = o.spec as { terminationGracePeriodSeconds?: number; nodeName?: string } | undefined;
    const finished = ['Succeeded', 'Failed'].includes((o.status as { phase?: string } | undefined)?.phase ?? '');
    const grace = resource !== 'pods' || finished || !podSpec?.nodeName ? 0 : (opts.gracePeriodSeconds ?? podSpec.terminationGracePeriodSeconds ?? 30);
    let marked = { ...o, metadata: { ...o.metadata } };
    if (resource === 'pods') marked.metadata.deletionGracePeriodSeconds = grace;
    if (opts.mark && !o.metadata.deletionTimestamp) marked = opts.mark(marked);
    if (!this.held(resource, marked)) {
      this.rv++;
      this.objects.delete(key(resource, ns, name));
      this.save();
      const gone = { ...o, metadata: { ...o.metadata, resourceVersion: String(this.rv) } };
      this.emit('DELETED', resource, gone);
      return clone(gone);
    }
    if (o.metadata.deletionTimestamp) {
      // Already going: a shorter grace period shortens it (the kubelet's final delete is 0), as the real server does.
      if (resource !== 'pods' || grace >= (o.metadata.deletionGracePeriodSeconds ?? 0)) return clone(o);
      this.rv++;
      marked.metadata.deletionTimestamp = rfc3339(Math.min(Date.parse(o.metadata.deletionTimestamp), Date.now() + grace * 1000));
      marked.metadata.resourceVersion = String(this.rv);
      cur.obj = marked;
      this.save();
      this.emit('MODIFIED', resource, marked, o);
      return clone(marked);
    }
    this.rv++;
    marked.metadata.deletionTimestamp = rfc3339(Date.now() + grace * 1000);
    marked.metadata.resourceVersion = String(this.rv);
    cur.obj = marked;
    this.save();
    this.emit('MODIFIED', resource, marked, o);
    return clone(marked);
  }
}
