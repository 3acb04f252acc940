/**
 * A process that takes the embedded store's lock at an agreed instant (argv: path, epoch ms), says
 * whether it got it, and holds it until its stdin ends: however late a slow machine starts it, no
 * other process can find the lock released by the one that got it first.
 */
import { acquireLock } from '../../src/store/lock-file.ts';

const [path, at] = process.argv.slice(2);
while (Date.now() < Number(at)) {
  // Spin to the agreed instant: a timer would spread the processes over milliseconds.
}
try {
  const release = acquireLock(path!);
  process.stdout.write('got\n');
  process.stdin.resume();
  process.stdin.on('end', () => {
    release();
    process.exit(0);
  });
} catch (error) {
  process.stdout.write(`refused: ${(error as Error).message}\n`);
}
