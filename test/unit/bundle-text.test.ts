// src/runtime/run-program.ts' bundleText: the launchers read the program as bytes and decode them once;
// an ASCII bundle takes the fast Latin-1 path, anything else must still come out as its UTF-8 text.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ProgramCodeCache } from '../../src/runtime/code-cache.js';
import { bundleText } from '../../src/runtime/run-program.js';
import { tmpDir } from '../support/tmp.js';

describe('a bundle read as bytes', () => {
  it('gives the text of an ASCII bundle and of one with UTF-8 in it', () => {
    const ascii = 'module.exports = "a\\u00e9";\n';
    assert.equal(bundleText(Buffer.from(ascii, 'utf8')), ascii);
    // Decoded as Latin-1 these would be "Ã©" and four characters for the emoji.
    const utf8 = 'module.exports = "é 🎙";\n';
    assert.equal(bundleText(Buffer.from(utf8, 'utf8')), utf8);
    assert.equal(bundleText(Buffer.alloc(0)), '');
  });

  it('keys the code cache the same whether the program is given as its text or its bytes', () => {
    const dir = path.join(tmpDir(), 'cache');
    for (const program of ['console.log(42);\n', 'console.log("é");\n']) {
      assert.equal(new ProgramCodeCache(dir, Buffer.from(program, 'utf8')).file, new ProgramCodeCache(dir, program).file);
    }
    assert.notEqual(new ProgramCodeCache(dir, 'a').file, new ProgramCodeCache(dir, 'b').file);
  });
});
