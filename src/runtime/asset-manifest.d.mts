// Types for src/runtime/asset-manifest.mjs (plain JavaScript, shared with the build scripts).
export interface RuntimeAsset {
  readonly name: string;
  readonly source: string;
}
export declare const UWS_ABI: string;
export declare function uwsAddonFileName(arch: string, platform?: string, abi?: string): string;
export declare const SQL_WASM: string;
export declare const SWAGGER_UI_FILES: readonly string[];
export declare function runtimeAssets(arch: string): readonly RuntimeAsset[];
