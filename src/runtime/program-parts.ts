// The program's parts (src/runtime/asset-manifest.mjs, PROGRAM_PARTS): npm packages that build.mjs bundles
// apart from the program, to which the program's bundle resolves them. A part's code is read and compiled
// the first time something imports one of its packages, and only then: an idle service without MQTT never
// holds the source of mqtt.js. Under tsx (development, tests) nothing here runs: the packages resolve
// from node_modules as usual.
import { createRequire } from 'node:module';
import path from 'node:path';
import { assetFile, programFile, requireAsset, runsFromExecutable } from './assets.js';
import { bundleText, runCommonJs } from './run-program.js';

const loaded = new Map<string, Record<string, unknown>>();

/** The exports of part `name` (an asset name, `parts/mqtt.cjs`): its packages' modules, by package name. */
export function loadProgramPart(name: string): Record<string, unknown> {
  let part = loaded.get(name);
  if (!part) {
    part = runsFromExecutable() ? compileEmbedded(name) : requireFile(name);
    loaded.set(name, part);
  }
  return part;
}

/** `node dist/voice-hub.cjs`: the file beside the bundle, through Node's own loader. */
function requireFile(name: string): Record<string, unknown> {
  const file = assetFile(name); // a build without it fails here, naming what is missing and where it looked
  return createRequire(file)(file) as Record<string, unknown>;
}

/**
 * Inside a single executable: the part's source from the payload, run as the CommonJS module it is, as
 * src/runtime/sea-main.ts runs the program. A part needs nothing but Node's own modules.
 */
function compileEmbedded(name: string): Record<string, unknown> {
  return runCommonJs(bundleText(requireAsset(name)), path.join(programFile(), name), programFile()).exports;
}
