// Reading a file the configuration names (the configuration file, the HTTPS certificate and key, the
// upstream CA file) with a bound and only when it is a regular file: /dev/zero, a FIFO or a huge file
// named by mistake was read until memory ran out (16 GB here, then std::bad_alloc), synchronously, so
// not even SIGINT stopped it. It imports nothing of ours, so configuration can use it.
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';

/** Why a file was not read, as an errno-like code: the system's (ENOENT, EACCES...) or one of these. */
export const NOT_A_REGULAR_FILE = 'ENOTREG';
export const FILE_TOO_LARGE = 'EFBIG';

const refused = (code: string, text: string): NodeJS.ErrnoException => Object.assign(new Error(text), { code });

/**
 * The bytes of `file`, at most `maxBytes`. Throws an error with `code`: the system's for a file that
 * cannot be opened, EISDIR for a directory, NOT_A_REGULAR_FILE for a device, FIFO or socket (opened
 * without blocking, never read), FILE_TOO_LARGE past `maxBytes` (never read whole).
 */
export function readBoundedFile(file: string, maxBytes: number): Buffer {
  const fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const stat = fstatSync(fd);
    if (stat.isDirectory()) throw refused('EISDIR', `${file} is a directory`);
    if (!stat.isFile()) throw refused(NOT_A_REGULAR_FILE, `${file} is not a regular file`);
    if (stat.size > maxBytes) throw refused(FILE_TOO_LARGE, `${file} has more than ${maxBytes} bytes`);
    // The size read above may have grown since: read one byte past the bound at most.
    const buffer = Buffer.alloc(stat.size + 1 > maxBytes ? maxBytes + 1 : stat.size + 1);
    let length = 0;
    for (let n; length < buffer.length && (n = readSync(fd, buffer, length, buffer.length - length, null)) > 0;) length += n;
    if (length > maxBytes) throw refused(FILE_TOO_LARGE, `${file} has more than ${maxBytes} bytes`);
    return buffer.subarray(0, length);
  } finally {
    closeSync(fd);
  }
}

/** A reason a technician reads, for the codes above and the usual system ones. */
export function unreadableReason(code: string | undefined, maxBytes: number, what: string): string {
  switch (code) {
    case 'ENOENT': return 'it does not exist';
    case 'EACCES': return 'permission denied';
    case 'EISDIR': return 'it is a directory';
    // The path itself is wrong: a bare code here was all start-up said (`cannot read x.pem/key: ENOTDIR`).
    case 'ENOTDIR': return 'a part of its path is a file, not a directory';
    case 'ELOOP': return 'its path has a loop of symbolic links';
    case 'ENAMETOOLONG': return 'its path or a name in it is too long';
    case 'EIO': return 'an input/output error (a failing SD card or disk?)';
    case NOT_A_REGULAR_FILE: return 'it is not a regular file';
    case FILE_TOO_LARGE: return `it has more than ${maxBytes / 1024 / 1024} MiB, far more than ${what}`;
    default: return code ?? 'unknown error';
  }
}
