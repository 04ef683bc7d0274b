// Types for src/runtime/node-options.mjs (plain JavaScript, shared with the build scripts).
export declare const NODE_FLAGS: readonly string[];
export declare const NODE_OPTIONS_TEXT: string;
