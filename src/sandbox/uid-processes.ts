import { readdir, readFile } from 'node:fs/promises';

/** Pids of every live host process whose real uid is `uid` (zombies hold nothing and are left out). */
export async function listUidProcesses(uid: number): Promise<number[]> {
  const entries = await readdir('/proc');
  const found: number[] = [];
  await Promise.all(
    entries
      .filter((name) => /^\d+$/.test(name))
      .map(async (name) => {
        let status: string;
        try {
          status = await readFile(`/proc/${name}/status`, 'utf8');
        } catch {
          return; // the process ended while we looked
        }
        const match = /^Uid:\s+(\d+)/m.exec(status);
        const zombie = /^State:\s+Z/m.test(status);
        if (match && Number(match[1]) === uid && !zombie) found.push(Number(name));
      }),
  );
  return found.sort((a, b) => a - b);
}

/** SIGKILLs every process of `uid`; only ever called with a sandbox uid that no other sandbox holds. */
export async function killUidProcesses(uid: number): Promise<number[]> {
  const pids = await listUidProcesses(uid);
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  return pids;
}
