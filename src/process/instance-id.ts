// This installation's hub instance id: 12 random hex digits, generated on first start and kept in the
// data directory. It tells hubs apart where they share something: the MQTT client id (a broker closes
// an older connection with the same client id), Home Assistant discovery topics and unique ids. Hex
// digits are valid in MQTT topics and in Home Assistant node, object and unique ids without any escaping.
//
// The id must never change under a running installation: Home Assistant would see a new hub and new
// entities, and automations on the old entities would go quiet. So a damaged file stops start-up with a
// message saying what removing it costs, instead of being replaced silently.
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { FILE_TOO_LARGE, NOT_A_REGULAR_FILE, readBoundedFile } from '../bounded-file.js';
import { DataFileError, errorText } from '../errors.js';
import { removeStaleTempFiles, writeFileDurably } from '../store/durable-file.js';
import { makeDirs } from '../runtime/make-dirs.js';

export const INSTANCE_ID_FILE = 'instance-id';
const INSTANCE_ID = /^[0-9a-f]{12}$/;
/** Far more than an id and its line end, blanks included, that someone edited by hand. */
const MAX_FILE_BYTES = 4096;
const REMOVING_IT = 'remove it to generate a new id (Home Assistant then sees a new hub with new entities)';

export interface InstanceId {
  readonly id: string;
  /** Whether this start generated it (first start in this data directory). */
  readonly created: boolean;
  readonly file: string;
  /** Temporary files of a write a crash interrupted, removed now (durable-file.ts). */
  readonly removed: readonly string[];
}

const damaged = (file: string): DataFileError =>
  new DataFileError(`the hub instance id file ${file} is damaged (it must hold 12 hex digits); restore it from a backup, or ${REMOVING_IT}`);

/**
 * Reads `<dataDir>/instance-id`, creating it (durably: temp file, fsync, rename) when there is none.
 * Called with the data directory's lock held, as the store's files are opened: a temporary file of
 * another process is then one a crash left behind.
 */
export async function loadInstanceId(dataDir: string): Promise<InstanceId> {
  const file = path.join(dataDir, INSTANCE_ID_FILE);
  const removed = await removeStaleTempFiles(file);
  const found = readInstanceId(dataDir);
  if (found !== undefined) return { id: found, created: false, file, removed };
  const id = randomBytes(6).toString('hex');
  try {
    makeDirs(dataDir, 0o750);
    await writeFileDurably(file, new TextEncoder().encode(id + '\n'));
  } catch (e) {
    throw new Error(`cannot create the hub instance id file ${file}: ${(e as NodeJS.ErrnoException).code ?? errorText(e)}`);
  }
  return { id, created: true, file, removed };
}

/**
 * The id `<dataDir>/instance-id` holds, undefined when there is none, writing nothing: what a start
 * would refuse is refused here (DataFileError), so it is checked before anything is created, and by
 * `config check` beside a running service. The system's refusals (EACCES) are thrown as they are.
 */
export function readInstanceId(dataDir: string): string | undefined {
  const file = path.join(dataDir, INSTANCE_ID_FILE);
  let text: string;
  try {
    // Bounded and opened without blocking (bounded-file.ts): a FIFO here blocked the start for good.
    text = readBoundedFile(file, MAX_FILE_BYTES).toString('utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === NOT_A_REGULAR_FILE || code === 'EISDIR') throw new DataFileError(`the hub instance id file ${file} is not a regular file: refused, it was left untouched; ${REMOVING_IT}`);
    if (code === FILE_TOO_LARGE) throw damaged(file);
    throw e;
  }
  const id = text.trim();
  if (!INSTANCE_ID.test(id)) throw damaged(file);
  return id;
}
