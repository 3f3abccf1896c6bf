import { createHash, randomBytes } from 'node:crypto';

export interface CountMinSketch {
  /** Counts one for key and returns its count: never less than the true count, more when keys collide. */
  add(key: string): number;
  clear(): void;
}

const DEPTH = 4;

/**
 * A count-min sketch of DEPTH rows of `width` counters, with the conservative update (only the
 * smallest of a key's counters grow), in a fixed Uint32Array whatever the number of keys. The rows'
 * hashes are keyed with a secret drawn per sketch, so no one can aim keys at another caller's cells.
 */
export function countMinSketch(width: number): CountMinSketch {
  if (!Number.isInteger(width) || width < 1) throw new Error(`sketch width must be a positive integer, got ${width}`);
  const counters = new Uint32Array(width * DEPTH);
  const secret = randomBytes(16);
  const cells = new Array<number>(DEPTH).fill(0);
  return {
    add(key) {
      // One SHA-256 gives the four rows' 32-bit hashes; only keys past the exact map get here.
      const digest = createHash('sha256').update(secret).update(key).digest();
      let min = Infinity;
      for (let row = 0; row < DEPTH; row++) {
        const cell = row * width + (digest.readUInt32LE(row * 4) % width);
        cells[row] = cell;
        min = Math.min(min, counters[cell]!);
      }
      const count = min + 1;
      for (const cell of cells) if (counters[cell]! < count) counters[cell] = count;
      return count;
    },
    clear() {
      counters.fill(0);
    },
  };
}
