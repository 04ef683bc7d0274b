// src/http/status-text.ts keeps its own copy of the reason phrases so that node:http is not loaded at
// start; it must say what Node says, on every runtime the tests run on (Node 20 and 24).
import assert from 'node:assert/strict';
import { STATUS_CODES } from 'node:http';
import { describe, it } from 'node:test';
import { STATUS_TEXT, statusLine } from '../../src/http/status-text.js';

describe('status texts', () => {
  it('are node:http\'s STATUS_CODES, code for code', () => {
    assert.deepEqual({ ...STATUS_TEXT }, { ...STATUS_CODES });
  });

  it('make status lines, with the caller\'s text for a code that has none', () => {
    assert.equal(statusLine(200), '200 OK');
    assert.equal(statusLine(413), '413 Payload Too Large');
    assert.equal(statusLine(299), '299 Unknown');
    assert.equal(statusLine(299, ''), '299 ');
  });
});
