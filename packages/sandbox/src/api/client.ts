/**
 * The sandbox's own client of its API: what the kubelet stand-in (on a node) and the
 * scenarios (on the host) use to read and write objects. A kubeconfig's first
 * cluster and user (CA data, server, bearer token), JSON over HTTPS, and watches as
 * one JSON event per line. Nothing here is for decom itself, which talks to any API
 * server through @kubernetes/client-node.
 */
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { parse } from 'yaml';

type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export interface Reply {
  code: number;
  body: Any;
}

export class ApiClient {
  private readonly url: URL;

  constructor(
    server: string,
    private readonly ca: Buffer,
    private readonly token: string,
  ) {
    this.url = new URL(server);
  }

  /** The API server's URL, as the kubeconfig names it. */
  get server(): URL {
    return this.url;
  }

  /** Whether an Authorization header carries this client's own token (the kubelet's check of the API server's calls). */
  authorizes(header: string | undefined): boolean {
    return header === `Bearer ${this.token}`;
  }

  static fromKubeconfig(file: string): ApiClient {
    const kc = parse(readFileSync(file, 'utf8')) as Any;
    const cluster = kc?.clusters?.[0]?.cluster ?? {};
    const user = kc?.users?.[0]?.user ?? {};
    if (!cluster.server || !cluster['certificate-authority-data'] || !user.token) {
      throw new Error(`${file}: needs a cluster with server and certificate-authority-data, and a user with a token`);
    }
    return new ApiClient(cluster.server, Buffer.from(cluster['certificate-authority-data'], 'base64'), user.token);
  }

  private open(method: string, path: string, headers: Record<string, string | number>, timeoutMs: number) {
    return request({
      host: this.url.hostname,
      port: this.url.port || 443,
      method,
      path,
      ca: this.ca,
      timeout: timeoutMs,
      headers: { Authorization: `Bearer ${this.token}`, Accept: 'application/json', ...headers },
    });
  }

  /** One request; any HTTP answer resolves (judge `code`), a network failure rejects. */
  request(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<Reply> {
    const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    return new Promise((resolve, reject) => {
      const req = this.open(method, path, data ? { 'Content-Type': contentType, 'Content-Length': data.length } : {}, 10_000);
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: Any = {};
          try {
            parsed = text ? (JSON.parse(text) as Any) : {};
          } catch {
            parsed = { message: text };
          }
          resolve({ code: res.statusCode ?? 0, body: parsed });
        });
        res.on('error', reject);
      });
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer in 10 s`)));
      req.on('error', reject);
      req.end(data);
    });
  }

  /** Like request, but anything other than 2xx rejects with the server's message. */
  async must(method: string, path: string, body?: unknown, contentType?: string): Promise<Any> {
    const r = await this.request(method, path, body, contentType);
    if (r.code < 200 || r.code > 299) throw new Error(`${method} ${path}: ${r.code} ${r.body.message ?? ''}`.trim());
    return r.body;
  }

  /** A watch: calls `onEvent` per event until the server ends the stream or `stop()`; resolves when it ends. */
  watch(path: string, onEvent: (type: string, obj: Any) => void): { done: Promise<void>; stop: () => void } {
    const req = this.open('GET', path, {}, 0);
    const done = new Promise<void>((resolve) => {
      req.on('response', (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          res.on('end', resolve);
          return;
        }
        let buf = '';
        res.on('data', (c: Buffer) => {
          buf += c.toString('utf8');
          let nl: number;
          while ((nl = buf.indexOf('\n')) >= 0) {
            const line = buf.slice(0, nl);
            buf = buf.slice(nl + 1);
            if (!line.trim()) continue;
            let e: { type: string; object: Any };
            try {
              e = JSON.parse(line) as { type: string; object: Any };
            } catch {
              continue; // a torn line: the next list repairs what it missed
            }
            onEvent(e.type, e.object);
          }
        });
        res.on('end', resolve);
        res.on('error', () => resolve());
      });
      req.on('error', () => resolve());
      req.end();
    });
    return { done, stop: () => req.destroy() };
  }
}
