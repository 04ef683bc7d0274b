// The asynchronous file calls the store makes, on descriptors, through Node's callback API. Not through
// node:fs/promises: loading it loads the readline interface, the watchers and the directory iterator
// it offers too, which an idle service then held for good (0.5 MiB of RSS in a bare node).
import { close, copyFile, fstat, fsync, open, readdir, readFile, rename, rm, unlink, write, writeFile } from 'node:fs';
import { promisify } from 'node:util';

export const openFile = promisify(open);
export const closeFile = promisify(close);
export const statFile = promisify(fstat);
export const syncFile = promisify(fsync);
/** The rest of an open file, from its position. */
export const readOpenFile = promisify(readFile) as (fd: number) => Promise<Buffer>;
/** `bytes` written from the file's position. */
export const writeOpenFile = promisify(writeFile) as (fd: number, bytes: Uint8Array) => Promise<void>;
export const writeText = promisify(write) as unknown as (fd: number, text: string) => Promise<{ bytesWritten: number }>;
export const copyFileTo = promisify(copyFile);
export const readDirectory = promisify(readdir) as (dir: string) => Promise<string[]>;
export const renameFile = promisify(rename);
export const removeFile = promisify(rm);
export const unlinkFile = promisify(unlink);
