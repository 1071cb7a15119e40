// Upload a file into a new project, ask about it (streamed), check two requirements and run a
// batch, with @kb-platform/sdk. Run: node packages/sdk/examples/quickstart.mjs <file>
// (KB_BASE_URL and KB_API_KEY set).
import { KbClient, uploadFile } from '@kb-platform/sdk';

const kb = new KbClient(); // KB_BASE_URL, KB_API_KEY
const file = process.argv[2] ?? '../shared/corpus/pdf/OSHA2001.pdf';

const project = await kb.projects.create({ name: 'SDK quickstart' });
let shown = '';
const document = await uploadFile(kb, file, {
  projectId: project.id,
  onProgress: (p) => p.document && p.document.status !== shown && console.log(`${p.document.file_name}: ${(shown = p.document.status)}`),
});
console.log(`${document.file_name}: ${document.status}, ${document.chunk_count} chunks`);

for await (const event of kb.agent.chat({
  messages: [{ role: 'user', content: 'Must employers notify employees exposed to toxic materials?' }],
  project_id: project.id,
  chat_type: 'project',
})) {
  if (event.event === 'delta') process.stdout.write(event.data.content);
  if (event.event === 'citations') console.log(`\n${event.data.citations.map((c) => `[${c.index}] ${c.file_name} p.${c.start_page}`).join('\n')}`);
}

const run = await kb.runs.createAndWait(
  { project_id: project.id, name: 'quickstart', requirements: ['Employers must notify employees exposed to toxic materials.', 'Backups must be encrypted.'] },
  { onProgress: (r) => console.log(`check ${r.status}: ${r.processed_requirements}/${r.total_requirements}`) },
);
for (const r of run.requirements) console.log(`${r.sub_requirements.every((s) => s.status === 'comply') ? 'PASS' : 'FAIL'} ${r.text}`);

const batch = await kb.batches.create({ questions: ['Who must keep records of exposures?'], project_id: project.id });
console.log(await kb.batches.export(batch.id, { wait: true }));
