// Types for scripts/sea-runtime.mjs (plain JavaScript, shared with the build scripts).
export interface Target {
  readonly pkg: string;
  readonly integrity: string;
  readonly abi: string;
  readonly legacy: boolean;
  readonly strip: string;
  readonly emulator: readonly string[];
  readonly uwsArch: string;
  readonly debArch: string;
}
export declare const TARGETS: Readonly<Record<string, Target>>;
export declare const NODE24_MIN_GLIBC: string;
export declare function glibcAtLeast(version: string, min: string): boolean;
export declare function hostTarget(): string;
export declare function nodeRuntime(target: Target, cacheDir: string): string;
