// A host's events read back across runs (hostEvents): a run that finishes a killed run
// reads what that run recorded, and what the run it finished recorded, and so on back;
// another host's events, and a journal gone, are not.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hostEvents, Journal } from './journal.js';
import { tempDir } from '../../test/helpers/temp.js';

describe('hostEvents', () => {
  const dir = tempDir('decom-journal-');

  it('follows each run back to the one it finished, for that host alone', () => {
    const a = new Journal(dir, 'A');
    a.write({ host: 'node3', event: 'drain-volumes', claims: ['a'] });
    a.write({ host: 'node2', event: 'drain-volumes', claims: ['other host'] });
    const b = new Journal(dir, 'B');
    b.write({ host: 'node3', event: 'resume', finishes: 'A' });
    b.write({ host: 'node3', event: 'drain-volumes', claims: ['b'] });
    const c = new Journal(dir, 'C');
    c.write({ host: 'node3', event: 'resume', finishes: 'B' });
    expect(hostEvents(dir, 'C', 'node3', 'drain-volumes').map((e) => e.claims)).toEqual([['b'], ['a']]);
    expect(hostEvents(dir, 'A', 'node2', 'drain-volumes').map((e) => e.claims)).toEqual([['other host']]);
    // A run that finished one whose journal is gone reads its own.
    const d = new Journal(dir, 'D');
    d.write({ host: 'node3', event: 'resume', finishes: 'gone' });
    d.write({ host: 'node3', event: 'drain-volumes', claims: ['d'] });
    expect(hostEvents(dir, 'D', 'node3', 'drain-volumes').map((e) => e.claims)).toEqual([['d']]);
    expect(join(dir, 'runs', 'D.jsonl')).toBe(d.file);
  });
});
