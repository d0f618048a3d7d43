// Types of the ES module entry (esm/index.mjs): those of the CommonJS build it re-exports.
export * from '../dist/index.js';
