/**
 * Starting and stopping the sandbox API, and what a client needs to reach it: a CA
 * and a server certificate made with openssl, a bearer token, and a kubeconfig beside
 * the sandbox's inventory. The process runs detached; its PID is in DIR/api/pid.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runOk } from 'decom/run';
import { isAlive, starttimeOf } from '../node.js';
import { ApiClient } from './client.js';

export interface ApiConfig {
  host: string;
  port: number;
  token: string;
  /** kube-controller-manager's --node-monitor-grace-period: a Node whose Lease is older goes Unknown. */
  nodeMonitorGracePeriodSeconds: number;
}

/** kube-controller-manager's default since v1.32. */
export const NODE_MONITOR_GRACE_PERIOD = 50;

export const API_PORT = 6443;
export const apiDir = (sandboxDir: string): string => join(sandboxDir, 'api');
export const kubeconfigFile = (sandboxDir: string): string => join(sandboxDir, 'kubeconfig');
const MAIN = join(dirname(fileURLToPath(import.meta.url)), 'main.js');

/**
 * The API's PID, only while that very process lives: the pid file holds "PID STARTTIME",
 * so a stale file (after a reboot) never names a process the sandbox did not start.
 */
const pidOf = (dir: string): number | undefined => {
  try {
    const [pid, start] = readFileSync(join(dir, 'pid'), 'utf8').trim().split(' ');
    return Number(pid) > 0 && start && isAlive({ pid: Number(pid), starttime: start }) ? Number(pid) : undefined;
  } catch {
    return undefined;
  }
};

/** The CA, the server's certificate (for the host side of the sandbox network and loopback), the token, the kubeconfig. */
async function prepare(sandboxDir: string, host: string, grace: number): Promise<ApiConfig> {
  const dir = apiDir(sandboxDir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const cfgFile = join(dir, 'api.json');
  if (existsSync(cfgFile)) return JSON.parse(readFileSync(cfgFile, 'utf8')) as ApiConfig;
  const p = (f: string) => join(dir, f);
  await runOk('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '365', '-subj', '/CN=decom-sandbox-ca', '-keyout', p('ca.key'), '-out', p('ca.crt')]);
  writeFileSync(p('san.cnf'), `subjectAltName=IP:${host},IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n`);
  await runOk('openssl', ['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', '/CN=kube-apiserver', '-keyout', p('server.key'), '-out', p('server.csr')]);
  await runOk('openssl', ['x509', '-req', '-in', p('server.csr'), '-CA', p('ca.crt'), '-CAkey', p('ca.key'), '-CAcreateserial', '-days', '365', '-extfile', p('san.cnf'), '-out', p('server.crt')]);
  const cfg: ApiConfig = { host, port: API_PORT, token: randomBytes(24).toString('hex'), nodeMonitorGracePeriodSeconds: grace };
  writeFileSync(cfgFile, JSON.stringify(cfg), { mode: 0o600 });
  const ca = readFileSync(p('ca.crt')).toString('base64');
  writeFileSync(
    kubeconfigFile(sandboxDir),
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- cluster:',
      `    certificate-authority-data: ${ca}`,
      `    server: https://${cfg.host}:${cfg.port}`,
      '  name: decom-sandbox',
      'contexts:',
      '- context:',
      '    cluster: decom-sandbox',
      '    user: admin',
      '  name: admin@decom-sandbox',
      'current-context: admin@decom-sandbox',
      'users:',
      '- name: admin',
      '  user:',
      `    token: ${cfg.token}`,
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  return cfg;
}

/** Answers once the API serves /readyz over TLS with its own CA. */
function ready(cfg: ApiConfig, ca: Buffer): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ host: cfg.host, port: cfg.port, path: '/readyz', ca, timeout: 500 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

/**
 * Starts the API (its objects kept from the last run) on `host` (the host side of its
 * instance's subnet), or says it already runs. The address and the grace period are
 * set when the API is first made.
 */
export async function startApi(sandboxDir: string, host: string, nodeMonitorGracePeriodSeconds = NODE_MONITOR_GRACE_PERIOD): Promise<{ pid: number; started: boolean }> {
  const dir = apiDir(sandboxDir);
  const cfg = await prepare(sandboxDir, host, nodeMonitorGracePeriodSeconds);
  const running = pidOf(dir);
  if (running) return { pid: running, started: false };
  const log = openSync(join(dir, 'api.log'), 'a');
  const child = spawn(process.execPath, [MAIN, dir], { detached: true, stdio: ['ignore', log, log] });
  child.unref();
  writeFileSync(join(dir, 'pid'), `${child.pid} ${starttimeOf(child.pid as number) ?? ''}`);
  const ca = readFileSync(join(dir, 'ca.crt'));
  for (let i = 0; i < 100; i++) {
    if (await ready(cfg, ca)) return { pid: child.pid as number, started: true };
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`the sandbox API did not start; see ${join(dir, 'api.log')}`);
}

/** Stops the API by its PID (its objects stay for the next start). */
export async function stopApi(sandboxDir: string): Promise<boolean> {
  const dir = apiDir(sandboxDir);
  const pid = pidOf(dir);
  rmSync(join(dir, 'pid'), { force: true });
  if (!pid) return false;
  const me = { pid, starttime: starttimeOf(pid) ?? '' };
  process.kill(pid, 'SIGTERM');
  for (let i = 0; i < 100 && isAlive(me); i++) await new Promise((r) => setTimeout(r, 50));
  if (isAlive(me)) process.kill(pid, 'SIGKILL');
  return true;
}

export const apiRunning = (sandboxDir: string): boolean => pidOf(apiDir(sandboxDir)) !== undefined;

/** The sandbox's own client of its API (scenarios), with the admin kubeconfig. */
export const apiClient = (sandboxDir: string): ApiClient => ApiClient.fromKubeconfig(kubeconfigFile(sandboxDir));
