import path from 'node:path';
import { LocalEmbeddingModel } from '@kb/models';
import { composeAnswer, composeExtractiveAnswer, NO_RELEVANT_INFORMATION } from './answer';
import { assessAnswerability } from './answerability';
import { passageOf } from './fixtures';
import { splitSentences } from './sentences';

const safety = passageOf([
  [3, 'Section 5 Fall protection. Guardrails shall be 42 inches high, plus or minus 3 inches. Toe boards are needed on scaffolds.'],
  [4, 'Hard hats are required at all times on site. Smoking is prohibited on site. Visitors must sign in at the gate.'],
]);
const noise = passageOf([[7, 'The canteen opens at 7 am. Parking is available behind the office.']], {
  chunkId: 'chunk-2',
  documentId: 'doc-2',
  fileName: 'facilities.docx',
  score: 0.4,
});

/** A sentence of about 1,100 characters (longer than the splitter's 800-character cap for the judge). */
const LONG_SENTENCE =
  'Where scaffolds are erected next to public walkways, the contractor shall provide a covered pedestrian passage ' +
  Array.from(
    { length: 12 },
    (_, i) => `with lighting fixture number ${i + 1} installed at the height shown on the drawings, inspected by the site engineer`,
  ).join(', ') +
  ', and the passage shall stay open to the public until the scaffold is removed.';
const long = passageOf([[9, `General rules apply. ${LONG_SENTENCE} Other rules follow.`]], { chunkId: 'chunk-3' });

describe('composeExtractiveAnswer (lexical variant of the answerability model)', () => {
  it('quotes exact whole sentences with [n] markers that match the citations one to one', () => {
    const a = composeExtractiveAnswer('How high must guardrails be?', [noise, safety]);
    expect(a.citations.length).toBeGreaterThanOrEqual(1);
    expect(a.answer.startsWith('Based on the documents (verbatim excerpts):')).toBe(true);
    const markers = [...a.answer.matchAll(/\[(\d+)\]/g)].map((m) => Number(m[1]));
    expect(markers).toEqual(a.citations.map((c) => c.index));
    expect(a.citations.map((c) => c.index)).toEqual(a.citations.map((_, i) => i + 1));
    for (const c of a.citations) {
      expect(c.quote.passage.text.slice(c.quote.start, c.quote.end)).toBe(c.quote.quote);
      expect(a.answer).toContain(`"${c.quote.quote}" [${c.index}]`);
      expect(c.score).toBeGreaterThan(0);
      expect(c.score).toBeLessThanOrEqual(1);
    }
    expect(a.citations[0].quote.quote).toBe('Guardrails shall be 42 inches high, plus or minus 3 inches.');
    expect(a.confidence).toBeGreaterThan(0);
    expect(a.confidence).toBeLessThanOrEqual(1);
  });

  it('gives a quote the page it is on, from pageSpans', () => {
    const a = composeExtractiveAnswer('Is smoking allowed on site?', [safety]);
    expect(a.citations[0].quote.quote).toBe('Smoking is prohibited on site.');
    expect(a.citations[0].quote).toMatchObject({ startPage: 4, endPage: 4 });
    expect(safety).toMatchObject({ startPage: 3, endPage: 4 });
  });

  it('respects maxSentences', () => {
    const a = composeExtractiveAnswer('Are hard hats required on site?', [safety], { maxSentences: 1 });
    expect(a.citations).toHaveLength(1);
  });

  it('says plainly that nothing answers the question, with no citations and a confidence below 0.7', () => {
    const a = composeExtractiveAnswer('What is the fire extinguisher inspection interval?', [safety, noise]);
    expect(a.answer).toBe(NO_RELEVANT_INFORMATION);
    expect(a.citations).toEqual([]);
    expect(a.confidence).toBeLessThan(0.7);
    const none = composeExtractiveAnswer('anything', []);
    expect([none.citations, none.confidence]).toEqual([[], 0]);
  });

  it('chooses among whole sentences: one longer than 800 characters is a candidate whole, never in pieces', async () => {
    expect(splitSentences(LONG_SENTENCE).length).toBeGreaterThan(1); // the judge's splitter caps it
    const d = await assessAnswerability('Who inspects the lighting fixtures of the covered pedestrian passage next to scaffolds?', [long]);
    expect(d.ranked.map((r) => r.alignment.unit.text)).toEqual(expect.arrayContaining([LONG_SENTENCE, 'General rules apply.', 'Other rules follow.']));
    expect(d.ranked).toHaveLength(3);
    expect(d.ranked[0].alignment.unit.text).toBe(LONG_SENTENCE);
  });

  it('reports token usage of the question, passages and answer', () => {
    const a = composeExtractiveAnswer('Are hard hats required?', [safety]);
    expect(a.usage.promptTokens).toBeGreaterThan(40);
    expect(a.usage.completionTokens).toBeGreaterThan(5);
    expect(a.usage.totalTokens).toBe(a.usage.promptTokens + a.usage.completionTokens);
  });
});

describe('composeAnswer with the real embedding model (sentences chosen by meaning)', () => {
  let model: LocalEmbeddingModel;
  beforeAll(async () => {
    model = await LocalEmbeddingModel.load({ modelsDir: path.resolve(__dirname, '../../../../shared/models'), model: 'all-MiniLM-L6-v2' });
  }, 120_000);
  const embed = (texts: string[]) => model.embed(texts, undefined, 'query');

  it('cites the sentence that means the answer over one that only shares the words', async () => {
    const forklift = passageOf([
      [
        2,
        'The forklift must be driven slowly in the warehouse and someone must check the forklift every day. Only employees aged 18 or over may operate lifting trucks. Pallets are stacked three high.',
      ],
    ]);
    const question = 'How old must someone be to drive the forklift?';
    const semantic = await assessAnswerability(question, [forklift], { embed });
    expect(semantic.variant).toBe('semantic');
    expect(semantic.ranked[0].alignment.unit.text).toBe('Only employees aged 18 or over may operate lifting trucks.');
    // Words alone prefer the sentence that repeats "forklift", "drive" and "someone".
    const lexical = await assessAnswerability(question, [forklift]);
    expect(lexical.ranked[0].alignment.unit.text).toMatch(/^The forklift must be driven/);
  });

  it('cites a sentence that names its subject by "It" when the sentence before names it (seen in the workspace screenshot)', async () => {
    // Page 7 of fedramp_guide_poam_rev5.pdf (shared corpus), the whole page as pdftotext extracts it.
    // Words alone already rank the right sentence first; by meaning, before "It" carried the sentence
    // before it, the sentence about the Registry's content won (the workspace-ask screenshot).
    const poam = passageOf([
      [
        7,
        [
          'Guide to OSCAL-Based FedRAMP\u00ae Plan of Action and Milestones (POA&M) \u2013 Rev. 5',
          'User Implementation Guide | Fedramp2.0.0-oscal1.0.x | 06/30/2023',
          '',
          '2 FedRAMP Extensions and Allowed Values',
          'NIST designed the core OSCAL syntax to model cybersecurity',
          'information that is common to most organization and',
          'compliance frameworks; however, NIST also recognized the',
          'need to provide flexibility or organizations with unique',
          'information needs.',
          '',
          'A summary of the',
          'FedRAMP extensions and',
          'allowed values appears in',
          'the FedRAMP OSCAL',
          'Registry.',
          '',
          'Instead of trying to provide a language that meets each',
          "organization's unique needs, NIST provided designed OSCAL with the ability to be extended.",
          'As a result, FedRAMP-compliant OSCAL files are a',
          'combination of the core OSCAL syntax and extensions defined',
          'by FedRAMP. The Guide to OSCAL-Based FedRAMP Content',
          'describes the concepts behind FedRAMP extensions and',
          'allowed values. The extensions related to the Plan of Action',
          'and Milestones (POA&M) are cited in this document in context',
          'of their use.',
          '',
          'These concepts are',
          'described in the Guide to',
          'OSCAL-based FedRAMP',
          'Content',
          '',
          'FedRAMP extensions and allowed values are cited in relevant portions of this document',
          'and summarized in the FedRAMP OSCAL Registry.',
          'Revised FedRAMP Registry Approach',
          'The FedRAMP OSCAL Registry was originally provided as a spreadsheet. It now uses the',
          'draft OSCAL Extensions syntax and is offered in XML and JSON formats, with a humanreadable HTML representation. This enables tools to be extension-aware.',
          '\u2022',
          '\u2022',
          '\u2022',
          '',
          'XML Version',
          'JSON Version',
          'HTML Version',
          '',
          'fedramp.gov',
          '',
          '3',
        ].join('\n'),
      ],
    ]);
    const a = await composeAnswer('In which formats must the FedRAMP OSCAL Registry be offered?', [poam], { embed });
    expect(a.citations[0].quote.quote).toMatch(/^It now uses the\s+draft OSCAL Extensions syntax and is offered in XML and JSON formats/);
  });

  it('falls back to the lexical variant when the embedding call fails', async () => {
    const failing = async () => {
      throw new Error('model gone');
    };
    const a = await composeAnswer('How high must guardrails be?', [safety], { embed: failing });
    expect(a.citations[0].quote.quote).toBe('Guardrails shall be 42 inches high, plus or minus 3 inches.');
  });

  it('declines a question that shares no content word with any sentence, however close the embedding finds it', async () => {
    const question = 'What is the recipe for a chocolate soufflé?';
    const d = await assessAnswerability(question, [safety, noise], { embed });
    expect(d.variant).toBe('semantic');
    expect(Math.max(...d.ranked.map((r) => r.semantic))).toBeGreaterThan(0);
    expect(d.confidence).toBe(0);
    expect(d.answerable).toBe(false);
    const a = await composeAnswer(question, [safety, noise], { embed });
    expect(a.answer).toBe(NO_RELEVANT_INFORMATION);
    expect(a.citations).toEqual([]);
  });

  it('abstains with no citations when the passages do not hold the answer', async () => {
    const a = await composeAnswer('What is the fire extinguisher inspection interval?', [safety, noise], { embed });
    expect(a.answer).toBe(NO_RELEVANT_INFORMATION);
    expect(a.citations).toEqual([]);
    expect(a.confidence).toBeLessThan(0.7);
  });
});
