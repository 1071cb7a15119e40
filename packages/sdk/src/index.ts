// @kb-platform/sdk (Node): the typed client (generated from the service's OpenAPI document) and
// helpers. Everything of the browser entry (browser.ts, no Node built-ins), plus the uploads from
// paths and folders (files.ts: node:fs, node:http).
export * from './browser';
export { uploadFile, uploadFiles, uploadDirectory, filesOf } from './files';
