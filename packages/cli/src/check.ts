import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import { stringify } from 'csv-stringify/sync';
import { runCheck, type CheckRunDetail, type KbClient } from '@kb-platform/sdk';
import { ExitCode } from './exit-codes';
import { gateMessage, LOW_CONFIDENCE, machinePasses as passes, runGate, type FailOn } from './gate';
import { clip, pages, printJson, progressBar, table } from './output';

/**
 * Requirements of a file: `.csv` → the column named `requirement` or `text` (case-insensitive), else
 * the first column, one requirement per row after the header (other columns go to `metadata`);
 * anything else → one requirement per non-empty line (lines starting with `#` are comments).
 * @throws Error when the file holds no requirement.
 */
export async function readRequirements(file: string): Promise<Array<{ text: string; metadata?: Record<string, string> }>> {
  const text = await readFile(file, 'utf8');
  let out: Array<{ text: string; metadata?: Record<string, string> }>;
  if (path.extname(file).toLowerCase() === '.csv') {
    const rows = parse<Record<string, string>>(text, { columns: true, skip_empty_lines: true, bom: true, trim: true });
    const columns = rows.length ? Object.keys(rows[0]) : [];
    const column = columns.find((c) => ['requirement', 'text'].includes(c.toLowerCase())) ?? columns[0];
    out = rows
      .filter((r) => (r[column] ?? '').trim())
      .map((r) => {
        const metadata = Object.fromEntries(Object.entries(r).filter(([k]) => k !== column));
        return Object.keys(metadata).length ? { text: r[column].trim(), metadata } : { text: r[column].trim() };
      });
  } else {
    out = text
      .split(/\r?\n/)
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'))
      .map((l) => ({ text: l }));
  }
  if (out.length === 0) throw new Error(`${file} holds no requirement (.csv: a "requirement" or first column; otherwise one per line).`);
  return out;
}

/** Options of `kb check`. */
export interface CheckCommandOptions {
  project: string;
  name?: string;
  out?: string;
  skipBreakdown?: boolean;
  handbook?: string[];
  json?: boolean;
  /** Exit 5 when the requirements are not met (gate.ts). */
  failOn?: FailOn;
}

/** One row per sub-requirement, for `--out results.csv`. */
function csvOf(run: CheckRunDetail): string {
  const rows: unknown[][] = [['index', 'requirement', 'result', 'sub_requirement', 'status', 'score', 'justification', 'sources']];
  for (const r of run.requirements) {
    const result = passes(r) === null ? r.status : passes(r) ? 'pass' : 'fail';
    const subs = r.sub_requirements.length ? r.sub_requirements : [null];
    for (const s of subs) {
      rows.push([
        r.order_index,
        r.text,
        result,
        s?.text ?? '',
        s?.status ?? '',
        s?.score ?? '',
        s?.justification ?? '',
        (s?.sources ?? []).map((src) => [src.title, pages(src)].filter(Boolean).join(' ')).join('; '),
      ]);
    }
  }
  return stringify(rows, { record_delimiter: '\r\n' });
}

/**
 * `kb check <requirements file> --project <id>`: creates a run, triggers it, shows a progress bar
 * until it ends, then a table of verdicts (or the run as JSON) and writes `--out` (.csv or .json).
 * Exit 1 when the run failed or was stopped; else, with `failOn`, exit 5 when the gate trips.
 */
export async function checkCommand(kb: KbClient, file: string, options: CheckCommandOptions): Promise<void> {
  const requirements = await readRequirements(file);
  const bar = progressBar('checking |{bar}| {value}/{total} requirements | {passed} pass, {failed} fail | {status}', !options.json, {
    hideCursor: true,
    barsize: 30,
  });
  let announced = false;
  const run = await runCheck(
    kb,
    {
      project_id: options.project,
      name: options.name ?? path.basename(file),
      requirements,
      ...(options.handbook?.length ? { handbook_ids: options.handbook } : {}),
    },
    {
      trigger: { skip_breakdown: !!options.skipBreakdown },
      onProgress: (r) => {
        // Padded: the bar is redrawn in place, a shorter status must cover a longer one.
        bar.update(r.processed_requirements, r.total_requirements, {
          passed: r.passed_requirements,
          failed: r.failed_requirements,
          status: r.status.padEnd(10),
        });
        if (!options.json && !process.stderr.isTTY && !announced) {
          announced = true;
          process.stderr.write(`check run ${r.id}: ${r.total_requirements} requirement(s)\n`);
        }
      },
    },
  ).finally(() => bar.stop());
  if (options.out) {
    const content = path.extname(options.out).toLowerCase() === '.json' ? `${JSON.stringify(run, null, 2)}\n` : csvOf(run);
    await writeFile(options.out, content);
  }
  if (options.json) printJson(run);
  else {
    const t = table(['#', 'requirement', 'verdict', 'conf.', 'evidence'], [4, 'flex', 9, 7, 'flex']);
    for (const r of [...run.requirements].sort((a, b) => a.order_index - b.order_index)) {
      const ok = passes(r);
      const scores = r.sub_requirements.map((s) => s.score);
      const sources = r.sub_requirements.flatMap((s) => s.sources ?? []);
      const evidence = r.sub_requirements.map((s) => /Evidence: "([\s\S]*)"\s*$/.exec(s.justification)?.[1] ?? '').find(Boolean);
      const where = sources[0] ? ` (${[sources[0].title, pages(sources[0])].filter(Boolean).join(' ')})` : '';
      t.push([
        String(r.order_index + 1),
        r.text,
        ok === null ? r.status : ok ? '✔ PASS' : '✘ FAIL',
        scores.length ? `${Math.min(...scores).toFixed(2)}${Math.min(...scores) < LOW_CONFIDENCE ? '*' : ''}` : '',
        evidence ? `"${clip(evidence, 220)}"${where}` : clip(r.sub_requirements[0]?.justification, 220),
      ]);
    }
    process.stdout.write(`${t.toString()}\n`);
    const doubtful = run.requirements.some((r) => r.sub_requirements.some((s) => s.score < LOW_CONFIDENCE));
    if (doubtful) process.stdout.write(`* confidence below ${LOW_CONFIDENCE}: the evidence is insufficient to rely on this verdict; review it.\n`);
    process.stdout.write(
      `Run ${run.id} ${run.status}: ${run.processed_requirements}/${run.total_requirements} checked, ${run.passed_requirements} pass, ${run.failed_requirements} fail${options.out ? `; results written to ${options.out}` : ''}\n`,
    );
  }
  if (run.status !== 'completed') process.exitCode = ExitCode.ERROR;
  else if (options.failOn) {
    const gate = runGate(run, options.failOn);
    if (gate.tripped) {
      process.stderr.write(gateMessage(gate, options.failOn));
      process.exitCode = ExitCode.REQUIREMENTS_FAILED;
    }
  }
}
