/**
 * THE way decom lists objects from the Kubernetes API: every page of a list, read with
 * limit/continue, so a 100k-pod cluster is read in bounded responses and no list is
 * silently cut at a server's limit. Every list decom makes goes through listAll (the
 * audit's, the drain's, the Node interlocks', the removal's).
 *
 * The page size is kubectl's default chunk size, 500. The environment variable
 * DECOM_LIST_PAGE_SIZE overrides it (the tests page by 1 or 2 to prove every page is
 * read): a whole number of at least 1, anything else is bad input (exit 2). It is read
 * where the lists are made, so a worker thread (the audit's lists) reads it too: a
 * worker inherits the process's environment.
 */
import { inputError } from '../util/errors.js';
import { parseWhole } from '../util/flags.js';

/** Items per page when DECOM_LIST_PAGE_SIZE does not say: kubectl's default chunk size. */
export const PAGE_SIZE = 500;

/** The page size: DECOM_LIST_PAGE_SIZE's, validated, else PAGE_SIZE. Call it before anything is contacted to refuse a bad value as bad input. */
export function listPageSize(env: NodeJS.ProcessEnv = process.env): number {
  const v = env.DECOM_LIST_PAGE_SIZE;
  if (v === undefined || v === '') return PAGE_SIZE;
  const n = parseWhole(v);
  if (n === undefined || n < 1) throw inputError(`DECOM_LIST_PAGE_SIZE ${JSON.stringify(v)}: expected a whole number of at least 1 (the items per page of the API's lists; default ${PAGE_SIZE})`);
  return n;
}

/** What one page of a list asks for. */
export interface PageRequest {
  limit: number;
  _continue?: string;
}

/** One page as the client library returns it (V1PodList, V1NodeList, …). */
export interface Page<T> {
  items: T[];
  metadata?: { _continue?: string };
}

/**
 * Every item of a list: `list` is asked for each page in turn (the first without a
 * continue token, each next one with the token the previous page gave) until a page
 * gives none. Selectors and other parameters are the caller's: spread the page request
 * into its own, `(p) => core.listPodForAllNamespaces({ fieldSelector, ...p })`.
 */
export async function listAll<T>(list: (page: PageRequest) => Promise<Page<T>>, pageSize: number = listPageSize()): Promise<T[]> {
  const items: T[] = [];
  let next: string | undefined;
  const seen = new Set<string>();
  do {
    const r = await list({ limit: pageSize, ...(next ? { _continue: next } : {}) });
    for (const item of r.items) items.push(item); // not push(...): a page may outgrow the argument limit
    next = r.metadata?._continue || undefined;
    // A server that hands back a token it gave before would have us read forever.
    if (next && seen.has(next)) throw new Error(`the API server returned the same continue token twice while listing (after ${items.length} items)`);
    if (next) seen.add(next);
  } while (next);
  return items;
}
