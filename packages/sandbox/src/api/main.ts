/**
 * The sandbox API's process: `node dist/api/main.js DIR` (in the sandbox package) serves the API
 * described by DIR/api.json until SIGTERM (its objects written to DIR/objects.json
 * before it exits), and runs the control plane's controllers once a second.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { apiServiceAvailabilityController } from './apiservices.js';
import { clusterRoleAggregationController } from './clusterrole-aggregation.js';
import { crdController } from './crds.js';
import { attachDetachController, daemonSetController, deploymentController, namespaceController, podGarbageCollector, nodeIpamController, nodeLifecycleController, replicaSetController, scheduler, seed } from './behaviour.js';
import { batchGarbageCollector, cronJobController, jobController, ttlAfterFinishedController } from './batch.js';
import { createApiServer } from './server.js';
import { serviceAccountAdmission, serviceAccountsController } from './service-accounts.js';
import { Store } from './store.js';
import { volumeBinder } from './volume-binder.js';
import type { ApiConfig } from './control.js';

const dir = process.argv[2];
if (!dir) {
  process.stderr.write('usage: main.js DIR\n');
  process.exit(2);
}
process.title = 'decom-sandbox-api';
const config = JSON.parse(readFileSync(join(dir, 'api.json'), 'utf8')) as ApiConfig;
const store = new Store(join(dir, 'objects.json'));
seed(store);
// Every namespace has its `default` account and root CA before the first request, as in a cluster that has run a while.
const serviceAccounts = serviceAccountsController(readFileSync(join(dir, 'ca.crt'), 'utf8'));
serviceAccounts(store);
store.admit(serviceAccountAdmission(store));
const server = createApiServer({ store, token: config.token, auditLog: join(dir, 'audit.log'), cert: readFileSync(join(dir, 'server.crt')), key: readFileSync(join(dir, 'server.key')), clientCa: readFileSync(join(dir, 'ca.crt')) });
server.listen(config.port, config.host, () => process.stdout.write(`decom sandbox API on https://${config.host}:${config.port}\n`));
const controllers: [string, (s: Store) => void][] = [
  ['serviceaccount', serviceAccounts],
  ['node-ipam', nodeIpamController],
  ['node-lifecycle', (s) => nodeLifecycleController(s, config.nodeMonitorGracePeriodSeconds ?? 50)],
  ['pod-gc', podGarbageCollector],
  ['daemonset', daemonSetController],
  ['deployment', deploymentController],
  ['replicaset', replicaSetController],
  ['cronjob', (s) => cronJobController(s)],
  ['job', (s) => jobController(s)],
  ['ttl-after-finished', (s) => ttlAfterFinishedController(s)],
  ['batch-garbage-collector', batchGarbageCollector],
  ['persistentvolume-binder', volumeBinder],
  ['scheduler', scheduler],
  ['attach-detach', attachDetachController],
  ['namespace', namespaceController],
  ['customresourcedefinition', crdController],
  ['apiservice-availability', apiServiceAvailabilityController],
  ['clusterrole-aggregation', clusterRoleAggregationController],
];
const tick = setInterval(() => {
  for (const [name, controller] of controllers) {
    try {
      controller(store);
    } catch (e) {
      process.stderr.write(`${name} controller: ${(e as Error).message}\n`);
    }
  }
}, 1000);
const stop = () => {
  clearInterval(tick);
  server.close();
  server.closeAllConnections();
  store.flush(); // the writes of the last interval (stopApi waits for the exit; the file is then whole and current)
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
