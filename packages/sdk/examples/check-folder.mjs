// Check a folder of documents against a list of requirements with @kb-platform/sdk: upload the folder into a
// new project, run the check, wait for it with light polls, save the report as CSV, and exit 5 when a
// requirement fails (the `kb` command line's code for "requirements failed", so a CI step can gate on it).
//
//   KB_BASE_URL=http://localhost:3000 KB_API_KEY=… node packages/sdk/examples/check-folder.mjs <folder> <requirements.txt> [report.csv]
//
// requirements.txt: one requirement per line (blank lines and lines starting with # are left out).
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { KbClient, uploadDirectory } from '@kb-platform/sdk';

const [folder, list, out = 'report.csv'] = process.argv.slice(2);
if (!folder || !list) {
  console.error('usage: node check-folder.mjs <folder> <requirements.txt> [report.csv]');
  process.exit(2);
}
const requirements = readFileSync(list, 'utf8')
  .split('\n')
  .map((line) => line.trim())
  .filter((line) => line && !line.startsWith('#'));

const kb = new KbClient(); // KB_BASE_URL, KB_API_KEY; retries 408/429/5xx with backoff
const project = await kb.projects.create({ name: `check ${path.basename(path.resolve(folder))}` });
const uploaded = await uploadDirectory(kb, folder, { projectId: project.id });
for (const { file, document } of uploaded.documents) console.log(`uploaded ${file}: ${document.status}, ${document.chunk_count} chunks`);
for (const { file, reason } of uploaded.skipped) console.log(`skipped ${file}: ${reason}`);
for (const { file, error } of uploaded.failed) console.log(`failed ${file}: ${error}`);

const run = await kb.runs.createAndWait(
  { project_id: project.id, name: path.basename(list), requirements },
  { onProgress: (r) => console.log(`run ${r.status}: ${r.processed_requirements}/${r.total_requirements}`) },
);
writeFileSync(out, await kb.runs.report(run.id, 'csv'));
const failing = run.requirements.filter((r) => !r.sub_requirements.every((s) => s.status === 'comply'));
for (const r of run.requirements) console.log(`${failing.includes(r) ? 'FAIL' : 'PASS'} ${r.text}`);
console.log(`report: ${out}`);
process.exit(failing.length ? 5 : 0);
