import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readRequirements } from './check';

describe('kb check: reading a requirements file', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'kb-req-'));
  const file = (name: string, text: string) => {
    const p = path.join(dir, name);
    writeFileSync(p, text);
    return p;
  };

  it('takes the "requirement" column of a CSV (any case, BOM, quoted commas and newlines) and keeps the others as metadata', async () => {
    const csv = file('a.csv', '\uFEFFRef,Requirement,Owner\r\nIR-1,"Alerts must be reviewed, daily.",SecOps\r\nIR-2,"Two\nlines",\r\n,,\r\n');
    expect(await readRequirements(csv)).toEqual([
      { text: 'Alerts must be reviewed, daily.', metadata: { Ref: 'IR-1', Owner: 'SecOps' } },
      { text: 'Two\nlines', metadata: { Ref: 'IR-2', Owner: '' } },
    ]);
  });

  it('takes the first column of a CSV without a requirement/text column', async () => {
    expect(await readRequirements(file('b.csv', 'clause\nLogs are kept one year.\n'))).toEqual([{ text: 'Logs are kept one year.' }]);
  });

  it('reads one requirement per line of any other file, without blanks and # comments', async () => {
    expect(await readRequirements(file('c.txt', '# header\n\n  First.  \r\nSecond.\n'))).toEqual([{ text: 'First.' }, { text: 'Second.' }]);
  });

  it('refuses a file with no requirement, saying what it expects', async () => {
    await expect(readRequirements(file('d.txt', '# only a comment\n'))).rejects.toThrow(/holds no requirement/);
  });
});
