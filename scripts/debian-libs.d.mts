// Types for scripts/debian-libs.mjs (plain JavaScript, also run by the Makefile).
export declare const SUITE: string;
export declare function debianMirror(suites: readonly string[]): string;
export interface DebianLibs {
  /** The folder the packages are unpacked into, as installed. */
  readonly root: string;
  /** Its dynamic loader. */
  readonly loader: string;
  /** Its library folder. */
  readonly libDir: string;
  /** The .deb files it holds: package, version, architecture. */
  readonly versions: readonly string[];
}
export declare function debianLibs(debArch: string): DebianLibs;
export declare function node24OnDebian13(): string;
