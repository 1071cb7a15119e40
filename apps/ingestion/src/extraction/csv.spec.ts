import { readFileSync } from 'node:fs';
import { extractDocument } from './index';
import { corpus } from './testing/corpus';

describe('CSV extraction (csv-parse)', () => {
  it('turns the OSHA event list into table blocks that all carry the header, including its odd "&nbsp;" column', async () => {
    const file = corpus('csv/osha_fatality_catastrophe_events_2013-06-15.csv');
    const doc = await extractDocument(file, 'text/csv');
    const header = 'Summary Nr | Event Date | SIC |  | Fat | Event Description | Report ID';
    expect(doc.pageCount).toBeNull();
    expect(doc.blocks.length).toBeGreaterThan(1);
    for (const block of doc.blocks) {
      expect(block.kind).toBe('table');
      expect(block.tableHeader).toBe(header);
      expect(block.text.startsWith(`${header}\n`)).toBe(true);
      expect(block.page).toBeNull();
    }
    const rows = doc.blocks.flatMap((b) => b.text.split('\n').slice(1));
    // the file repeats its header line between scraped pages; those copies are not rows
    const lines = readFileSync(file, 'utf8')
      .split(/\r?\n/)
      .filter((l) => l.trim());
    const dataLines = lines.slice(1).filter((l) => l !== lines[0]);
    expect(dataLines.length).toBeLessThan(lines.length - 2);
    expect(rows).toHaveLength(dataLines.length);
    expect(rows.some((r) => r.startsWith('Summary Nr'))).toBe(false);
    expect(rows[0]).toBe('200713956 | 08/18/2010 | 7534 | 61 | X | Worker Is Struck And Killed By Exploding Tire | 0636900');
    // a quoted cell with a comma stays one cell
    expect(rows[1]).toBe('200358224 | 09/03/2009 | 0782 | 6 | X | Employee Collapses Spraying Chemical, Later Dies | 0453710');
  });
});
