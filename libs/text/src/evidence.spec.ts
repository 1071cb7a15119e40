import { evidenceUnits, isNonEvidence, rankUnits, unitCandidates, unitModelText } from './evidence';
import { evidenceOfReading, topHeading, type RsmReading } from './verdict-signals';
import type { PassageInput } from './types';

const passage = (text: string, section: string | null = null): PassageInput => ({
  chunkId: 'c1',
  documentId: 'd1',
  fileName: 'policy.md',
  text,
  startPage: null,
  endPage: null,
  pageSpans: [],
  section,
  score: 1,
});

describe('isNonEvidence', () => {
  it.each([
    ['164.308(a)(5)(ii)(D) Password Management'],
    ['ISO 27001 A.9.4.3, NIST SP 800-53 IA-5, PCI DSS 8.2.3'],
    ['Password Management'],
    ['4.2 Access control ........ 12'],
    ['https://example.com/policies/access'],
    ['!!! check "Exceptions"'],
  ])('%s is not evidence on its own', (s) => expect(isNonEvidence(s)).toBe(true));

  it.each([
    ['Information systems automatically log users off the systems after 15 minutes of inactivity.'],
    ['Passwords must be at least 12 characters long.'],
    ['(h) Authenticated sessions must time out after a defined period of inactivity.'],
    ['A competent person inspects scaffolds before each shift.'],
    ['Backups are tested quarterly'],
  ])('%s is evidence', (s) => expect(isNonEvidence(s)).toBe(false));
});

describe('evidenceUnits', () => {
  it('offers single sentences and short runs, verbatim, and skips reference lines', () => {
    const text =
      'Applicable standards\n\n164.308(a)(5)(ii)(D) Password Management\n\nPasswords are changed every 90 days. Reuse of the last 24 passwords is prevented. Accounts lock after 5 failed attempts.';
    const p = passage(text, 'Access > Password Management');
    const units = evidenceUnits([p]);
    for (const u of units) expect(text.slice(u.start, u.end)).toBe(u.text);
    expect(units.map((u) => u.text)).not.toContain('164.308(a)(5)(ii)(D) Password Management');
    expect(units.some((u) => u.sentences.length === 3)).toBe(true);
    expect(units.filter((u) => u.sentences.length === 1).map((u) => u.text)).toEqual([
      'Passwords are changed every 90 days.',
      'Reuse of the last 24 passwords is prevented.',
      'Accounts lock after 5 failed attempts.',
    ]);
    expect(unitModelText(units[0])).toBe('Password Management: Passwords are changed every 90 days.');
  });

  it('gives a list item the lead-in it completes', () => {
    const text =
      'Northwind policy requires that\n\n(a) Access must be protected by strong authentication.\n\n(h) Authenticated sessions must time out after a defined period of inactivity.';
    const units = evidenceUnits([passage(text)]);
    const item = units.find((u) => u.text.startsWith('(h)') && u.sentences.length === 1)!;
    expect(item.leadIn).toBe('Northwind policy requires that');
    expect(unitModelText(item)).toBe('Northwind policy requires that (h) Authenticated sessions must time out after a defined period of inactivity.');
    const withLead = units.find((u) => u.text.startsWith('Northwind') && u.sentences.length === 2)!;
    expect(withLead.leadIn).toBeNull();
  });

  it('does not run a unit past the length limit', () => {
    const long = `${'Every visitor signs the register at the gate and is escorted by a member of staff. '.repeat(4)}`;
    for (const u of evidenceUnits([passage(long)])) expect(u.sentences.length === 1 || u.end - u.start <= 450).toBe(true);
  });
});

describe('rankUnits and unitCandidates', () => {
  const chunk = (id: string, text: string, score: number, section: string | null = null): PassageInput => ({
    ...passage(text, section),
    chunkId: id,
    documentId: `doc-${id}`,
    score,
  });

  it('ranks the unit that carries the requirement first, with the section title counting', () => {
    const a = chunk('a', 'Visitors sign the register at reception. The canteen opens at noon.', 2, 'Visitors');
    const b = chunk('b', 'Deliveries are accepted in the morning.', 1, 'Deliveries');
    const ranked = rankUnits('Visitors sign in at reception.', [a, b]);
    expect(ranked[0].unit.text).toBe('Visitors sign the register at reception.');
    expect(ranked[0].headingCoverage).toBeGreaterThan(0);
    expect(ranked[0].score).toBeGreaterThan(ranked.find((r) => r.unit.passage === b)!.score);
  });

  it('offers the best unit of each chunk, in retrieval order', () => {
    const first = chunk('first', 'Backups run nightly. Restores are tested quarterly.', 3);
    const second = chunk('second', 'Backups are encrypted at rest.', 2);
    const third = chunk('third', 'The office closes at six.', 1);
    const candidates = unitCandidates(rankUnits('Backups are tested.', [third, second, first]), 2);
    expect(candidates.map((c) => c.unit.passage.chunkId)).toEqual(['first', 'second']);
  });
});

describe('evidenceOfReading (the evidence among the candidates the requirement-satisfaction model read)', () => {
  const chunk = (id: string, text: string, section: string | null): PassageInput => ({ ...passage(text, section), chunkId: id, documentId: `doc-${id}` });
  const read = (id: string, text: string, section: string | null, satisfies: number, titleSimilarity: number | null, score = 0.5): RsmReading => {
    const [unit] = rankUnits('Incidents are reported within one hour.', [chunk(id, text, section)]);
    return { unit: { ...unit, score }, scores: [satisfies, 0.05, 0.95 - satisfies], titleSimilarity };
  };

  it("prefers, of two units the model reads alike, the one in the document whose title names the requirement's subject", () => {
    const training = read('training', 'Staff report suspected events to the security team.', 'Security Awareness Training > Topics', 0.72, 0.21);
    const incident = read('incident', 'Anyone who notices an event reports it to the security team.', 'Incident Response Procedure > Reporting', 0.7, 0.58);
    expect(evidenceOfReading([training, incident]).unit.unit.passage.chunkId).toBe('incident');
    // Without titles, the model's reading decides.
    expect(
      evidenceOfReading([
        { ...training, titleSimilarity: null },
        { ...incident, titleSimilarity: null },
      ]).unit.unit.passage.chunkId,
    ).toBe('training');
  });

  it('does not let a title outweigh a clear reading, nor favour or penalise a unit without heading', () => {
    const meets = read('meets', 'Incidents are reported to the security team within one hour.', 'Operations Manual', 0.93, 0.2);
    const titled = read('titled', 'The team meets weekly.', 'Incident Response Procedure', 0.08, 0.6);
    expect(evidenceOfReading([meets, titled]).unit.unit.passage.chunkId).toBe('meets');
    const plain = read('plain', 'Incidents are reported within the hour.', null, 0.8, null);
    const other = read('other', 'Reports go to the security team.', 'Incident Response Procedure', 0.7, 0.6);
    expect(evidenceOfReading([plain, other]).unit.unit.passage.chunkId).toBe('plain');
  });

  it('takes the top heading of a section path', () => {
    expect(topHeading('Incident Management Process > I - Identification and Triage')).toBe('Incident Management Process');
    expect(topHeading(null)).toBeNull();
    expect(topHeading('')).toBeNull();
  });
});
