// What every scenario plants that a test of it checks: the user's objects, which must look
// untouched, and the pods' cni-* netns.
import { expect } from 'vitest';
import { holders, lines, mounts, shimOf, type Facts } from '../../../decom/test/helpers/facts.js';

/** What is not Kubernetes' is planted by every scenario and must look untouched. */
export function expectUserObjects(node: string, f: Facts): void {
  expect(lines(f.netns)).toContain('app-vpn');
  expect(lines(f.links)).toContain('app-veth0');
  expect(f.iptNft).toContain(':APP-FIREWALL');
  expect(f.iptNft).toContain('-A INPUT -m comment --comment "app: firewall" -j APP-FIREWALL');
  expect(f.iptLegacy).toContain('-A APP-LEGACY -s 203.0.113.0/24 -m comment --comment "app: block" -j DROP');
  expect(f.nftTables).toContain('table inet app-filter');
  expect(mounts(f.mountinfo)).toContain('/srv/appdata');
  expect(f.userData.trim()).toBe('user data: must survive');
  expect(lines(f.files)).toContain('/etc/app/app.conf');
  // The user's container (containerd's default namespace) holds :8081, whether containerd is up or not.
  expect(shimOf(node, holders(f.listen).get(8081)!)).toMatch(/containerd-shim-runc-v2 -namespace default -id app-cache/);
}

export const cniNetns = (f: Facts) => lines(f.netns).filter((n) => n.startsWith('cni-'));

