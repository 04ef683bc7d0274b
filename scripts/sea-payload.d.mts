// Types for scripts/sea-payload.mjs, so TypeScript tests can build payloads the way the build does.
export declare const PAYLOAD_MAGIC: string;
export declare const TRAILER_BYTES: number;
export declare function buildPayload(assets: Iterable<readonly [string, Buffer]>): Buffer;
export declare function appendPayload(file: string, assets: Iterable<readonly [string, Buffer]>): void;
