// Types for src/runtime/asset-manifest.mjs (plain JavaScript, shared with the build scripts).
export interface RuntimeAsset {
  readonly name: string;
  /** The file under node_modules it is copied from. */
  readonly source?: string;
  /** The project source it is compiled from, when it is not copied. */
  readonly built?: string;
}
export declare const UWS_ADDONS: Readonly<Record<string, { readonly dir: string; readonly archs: readonly string[] }>>;
export declare const UWS_ABIS: readonly string[];
export declare function uwsAddonFileName(arch: string, platform: string, abi: string): string;
export declare function mallocAddonFileName(arch: string): string;
export declare function opusAddonFileName(arch: string): string;
export declare const PROGRAM_ASSET: string;
export declare const BUNDLE_MAIN: string;
export declare const SEA_MAIN: string;
export declare const SQL_WASM: string;
export interface ProgramPart {
  readonly name: string;
  readonly packages: readonly string[];
}
export declare const PROGRAM_PARTS: readonly ProgramPart[];
export declare const DECODE_WORKER_PART: string;
export declare const SWAGGER_UI_FILES: readonly string[];
export declare function runtimeAssets(arch: string, abi: string): readonly RuntimeAsset[];
