import path from 'node:path';
import { LocalEmbeddingModel } from '@kb/models';
import { NLI_CANDIDATES, type PassageInput } from '@kb/text';
import { openNliModel, openRsmModel } from './create-judge';
import { EmbeddedJudge, embedByLength, SentenceVectorCache } from './judges';

const ROOT = path.resolve(__dirname, '../../../..');

const passage = (id: string, fileName: string, text: string, score = 1): PassageInput => ({
  chunkId: id,
  documentId: `doc-${id}`,
  fileName,
  text,
  startPage: 1,
  endPage: 1,
  pageSpans: [{ page: 1, offset: 0 }],
  score,
});

const NOISE_PLAN = passage(
  'noise',
  'noise-management-plan.pdf',
  'Noise Management Plan\n\nHearing protection is required wherever noise exceeds 85 decibels. ' +
    'Noisy work is permitted only between 7 a.m. and 6 p.m. on weekdays. ' +
    'Noise monitoring results are reported to the site manager every week. Compressors are placed away from the site boundary.',
);
const IT_POLICY = passage(
  'it',
  'information-security-policy.pdf',
  'Information Security Policy\n\nAll VPN connections use IPsec with certificate-based authentication. ' +
    'Remote workers connect to the corporate network through the VPN only. Passwords are changed every 90 days.',
);
const ACCESS_POLICY = passage(
  'access',
  'visitor-policy.pdf',
  'Visitor Policy\n\nVisitors must sign in at the reception desk. Visitors must wear a visitor badge at all times. ' +
    'Deliveries are accepted between 8 a.m. and 4 p.m.',
);

/** The four judge examples of issue 13, with the in-process embedding model from ../shared/models. */
describe('EmbeddedJudge with the real embedding model (issue 13 examples)', () => {
  let judge: EmbeddedJudge;
  let lexical: EmbeddedJudge;
  let model: LocalEmbeddingModel;

  beforeAll(async () => {
    model = await LocalEmbeddingModel.load({ modelsDir: path.resolve(ROOT, '../shared/models'), model: 'all-MiniLM-L6-v2' });
    judge = new EmbeddedJudge(model);
    lexical = new EmbeddedJudge(null);
    expect(judge.semantic).toBe(true);
  }, 120_000);

  for (const mode of ['semantic', 'lexical'] as const) {
    const pick = () => (mode === 'semantic' ? judge : lexical);

    it(`${mode}: a paraphrased obligation with the same threshold is COMPLIANT ("above 85 decibels" / "exceeds 85 decibels")`, async () => {
      const { judgement, calls } = await pick().judge('Hearing protection must be worn where noise is above 85 decibels.', [NOISE_PLAN]);
      expect(judgement.verdict).toBe('COMPLIANT');
      // The usage record names the trained judge (docs/check.md, Verify step 5), not the old heuristic.
      expect(calls).toEqual([{ model: 'embedded-trained-judge', usage: judgement.usage }]);
      expect(judgement.evidence!.quote).toBe('Hearing protection is required wherever noise exceeds 85 decibels.');
      expect(judgement.recommendation).toBeNull();
    });

    it(`${mode}: a permitted window inside the required one is COMPLIANT ("not before 7 a.m." / "only between 7 a.m. and 6 p.m.")`, async () => {
      const { judgement } = await pick().judge('Noisy work must not start before 7 a.m.', [NOISE_PLAN]);
      expect(judgement.verdict).toBe('COMPLIANT');
      expect(judgement.evidence!.quote).toBe('Noisy work is permitted only between 7 a.m. and 6 p.m. on weekdays.');
    });

    it(`${mode}: a compound requirement whose two facts the policy states word for word complies part by part`, async () => {
      const requirement = 'Visitors must sign in at the reception desk and must wear a visitor badge at all times.';
      const { parts } = await pick().breakDown(requirement);
      expect(parts).toEqual(['Visitors must sign in at the reception desk', 'Visitors must wear a visitor badge at all times']);
      for (const part of parts) {
        const { judgement } = await pick().judge(part, [ACCESS_POLICY]);
        expect(judgement.verdict).toBe('COMPLIANT');
        expect(judgement.evidence!.quote).toContain(part);
        // Stated word for word: a confident COMPLIANT (decision rule 1, docs/check.md).
        expect(judgement.confidence).toBeGreaterThanOrEqual(0.7);
      }
    });

    it(`${mode}: encryption at rest is not COMPLIANT on a sentence about VPN connections`, async () => {
      const { judgement } = await pick().judge('All customer data at rest must be encrypted with AES-256.', [IT_POLICY]);
      expect(judgement.verdict).not.toBe('COMPLIANT');
      if (judgement.verdict !== 'NOT_FOUND') expect(judgement.confidence).toBeLessThan(0.7);
      expect(judgement.recommendation).toMatch(/AES-256|encrypt/i);
    });
  }

  it('a close paraphrase with every key term and no conflict cue is a confident COMPLIANT; a prohibition of it is CONTRADICTS', async () => {
    const osha = passage(
      'osha',
      'OSHA2001.pdf',
      'Each employer shall promptly notify any employee who has been or is being exposed to toxic materials or harmful physical agents ' +
        'in concentrations or at levels which exceed those prescribed by an applicable occupational safety and health standard.',
    );
    const ok = (
      await judge.judge('Employers shall promptly notify any employee exposed to toxic materials at levels which exceed the prescribed standard.', [osha])
    ).judgement;
    expect(ok.verdict).toBe('COMPLIANT');
    expect(ok.confidence).toBeGreaterThanOrEqual(0.7);
    // Without the requirement-satisfaction model the embeddings variant decides (a check run's reading leaves it alone).
    expect(ok.variant).toBe('semantic');
    expect((await lexical.judge('Employers shall promptly notify exposed employees.', [osha])).judgement.variant).toBe('lexical');
    const flipped = (await judge.judge('Employers must not notify employees exposed to toxic materials.', [osha])).judgement;
    expect(flipped.verdict === 'COMPLIANT' && flipped.confidence >= 0.7).toBe(false);
  });

  it('embeds in length-sorted calls and returns the vectors in input order', async () => {
    const texts = [
      'Visitor Policy',
      NOISE_PLAN.text,
      'Visitors must sign in at the reception desk.',
      IT_POLICY.text,
      'Badges',
      'Deliveries are accepted between 8 a.m. and 4 p.m.',
    ];
    const sorted = await embedByLength(model, texts);
    const single = await Promise.all(texts.map((t) => model.embed([t]).then((v) => v[0])));
    expect(sorted).toHaveLength(texts.length);
    const dot = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i], 0);
    // The same text's vector whatever its batch (up to 8-bit quantization noise); another text's is far.
    sorted.forEach((v, i) => expect(dot(v, single[i])).toBeGreaterThan(0.97));
    expect(dot(sorted[0], single[1])).toBeLessThan(0.9);
  });

  it('says what is missing when it is unsure', async () => {
    const { judgement } = await judge.judge('Noise monitoring results must be published on the project website every month.', [NOISE_PLAN]);
    if (judgement.confidence < 0.7) expect(judgement.explanation).toMatch(/insufficient/);
    expect(judgement.verdict === 'COMPLIANT' && judgement.confidence >= 0.7).toBe(false);
  });
});

/**
 * Issue 27: abstract obligations against the concrete statements of a policy, with the committed
 * requirement-satisfaction model and the judge's rsm variant (the check service's default judge).
 */
describe('EmbeddedJudge with the requirement-satisfaction model (issue 27 examples)', () => {
  let judge: EmbeddedJudge;
  const policy = (id: string, section: string, text: string, score = 1): PassageInput => ({
    ...passage(id, `${id}-policy.md`, text, score),
    section,
    startPage: null,
    endPage: null,
    pageSpans: [],
  });
  const ACCESS = policy(
    'access',
    'Systems Access Policy > Automatic Logoff',
    'Information systems automatically log users off the systems after 15 minutes of inactivity. Users must lock their workstation when they leave it.',
  );
  const PASSWORDS = policy(
    'passwords',
    'Systems Access Policy > Password Management',
    'Applicable standards from the HIPAA Security Rule\n\n164.308(a)(5)(ii)(D) Password Management\n\n' +
      'Passwords are at least 12 characters long and combine upper case, lower case and numbers. Users change their password every 90 days and cannot reuse their last 24 passwords. Passwords are stored only as salted hashes.',
    0.9,
  );
  const SITE = policy(
    'site',
    'Site Safety Plan > Scaffolds',
    'A competent person inspects every scaffold before each shift. Hard hats are worn at all times on site.',
  );

  beforeAll(async () => {
    const model = await LocalEmbeddingModel.load({ modelsDir: path.resolve(ROOT, '../shared/models'), model: 'all-MiniLM-L6-v2' });
    const rsm = (await openRsmModel('', model)).model;
    judge = new EmbeddedJudge(model, new SentenceVectorCache(), undefined, null, rsm);
    expect(judge.satisfaction).toBe(true);
  }, 120_000);

  it('a concrete statement satisfies an abstract obligation: automatic logoff after 15 minutes meets "terminate a session after inactivity"', async () => {
    const { judgement } = await judge.judge('Implement electronic procedures that terminate an electronic session after a predetermined time of inactivity.', [
      SITE,
      ACCESS,
    ]);
    expect(judgement.verdict).toBe('COMPLIANT');
    expect(judgement.variant).toBe('rsm');
    expect(judgement.evidence!.quote).toContain('automatically log users off the systems after 15 minutes of inactivity');
    // framing is not content the evidence must repeat: the explanation does not ask for "implement" or "procedures"
    expect(judgement.explanation).not.toMatch(/not found in the closest sentence: [^;]*\b(?:implement|procedures)\b/i);
  });

  it("a sentence that states a titled requirement's text word for word states the requirement", async () => {
    // metadata.title "Head protection", joined by the run worker: the plan states the requirement word for word.
    const requirement = 'Head protection: Hard hats are worn at all times on site.';
    const { judgement } = await judge.judge(requirement, [ACCESS, SITE], undefined, 'Head protection');
    expect(judgement.verdict).toBe('COMPLIANT');
    expect(judgement.confidence).toBeGreaterThanOrEqual(0.7);
    expect(judgement.explanation).toContain('It states the requirement word for word');
    // Without the title given, "Head protection" is part of what the sentence must state: the same quote is only an unsure pass.
    const untold = (await judge.judge(requirement, [ACCESS, SITE])).judgement;
    expect(untold.confidence).toBeLessThan(0.7);
    expect(untold.explanation).toMatch(/not found in the closest sentence: Head, protection/);
  });

  it('a password section meets "procedures for creating, changing, and safeguarding passwords", never the reference line', async () => {
    const { judgement } = await judge.judge('Procedures for creating, changing, and safeguarding passwords.', [SITE, PASSWORDS]);
    expect(judgement.verdict).toBe('COMPLIANT');
    expect(judgement.evidence!.quote).not.toContain('164.308');
    expect(judgement.evidence!.passage.chunkId).toBe('passwords');
  });

  it('a frequency the requirement states and the quoted passage does not is said in the explanation, never confidently', async () => {
    const REVIEW = policy('review', 'Access Policy > Access Authorization', '(d) Access must be reviewed on a regular basis and revoked if no longer needed.');
    const { judgement } = await judge.judge('Access rights must be reviewed at least annually.', [SITE, REVIEW]);
    // Today COMPLIANT below 0.7 with the note (a NOT_FOUND would be right too); never a silent or confident pass.
    expect(
      judgement.verdict === 'NOT_FOUND' ||
        (judgement.verdict === 'COMPLIANT' && judgement.explanation.includes('It does not say how often; the requirement says annually')),
    ).toBe(true);
    expect(judgement.confidence).toBeLessThan(0.7);
    const ANNUAL = policy(
      'annual',
      'Access Policy > Access Authorization',
      "(f) All system access must be reviewed at least annually and whenever a user's job role changes.",
    );
    const stated = (await judge.judge('Access rights must be reviewed at least annually.', [SITE, ANNUAL])).judgement;
    expect(stated.verdict).toBe('COMPLIANT');
    expect(stated.explanation).not.toContain('does not say how often');
  });

  it('a security obligation is not met by a construction plan, and never confidently', async () => {
    const { judgement } = await judge.judge('Implement procedures for guarding against, detecting, and reporting malicious software.', [SITE]);
    expect(judgement.verdict === 'COMPLIANT' && judgement.confidence >= 0.7).toBe(false);
  });
});

describe('EmbeddedJudge.signals with the committed entailment cross-encoder (train:judge dumps)', () => {
  it('scores the first NLI_CANDIDATES evidence candidates and dumps their scores, from which the nli signals follow', async () => {
    const model = await LocalEmbeddingModel.load({ modelsDir: path.resolve(ROOT, '../shared/models'), model: 'all-MiniLM-L6-v2' });
    const nli = (await openNliModel('', model, true)).model;
    expect(nli).not.toBeNull();
    const judge = new EmbeddedJudge(model, new SentenceVectorCache(), undefined, nli);
    const requirement = 'Visitors must wear a visitor badge at all times.';
    const s = await judge.signals(requirement, [ACCESS_POLICY, NOISE_PLAN, IT_POLICY]);
    // the passages have more sentences than NLI_CANDIDATES: exactly that many are scored, best first
    expect(s.nliScores).toHaveLength(NLI_CANDIDATES);
    for (const p of s.nliScores!) expect(p[0] + p[1] + p[2]).toBeCloseTo(1, 5);
    // train_judge.py's nli_vector derives the nli signals from these scores: keep the two in step
    const [first] = s.nliScores!;
    expect(s.nli!.slice(-4)).toEqual([first[0], first[1], Math.max(...s.nliScores!.map((p) => p[0])), Math.max(...s.nliScores!.map((p) => p[1]))]);
    expect(s.nli!.slice(0, -4)).toEqual(s.semantic);
  }, 120_000);
});

describe('SentenceVectorCache', () => {
  it('keeps the most recently used vectors up to its capacity', () => {
    const cache = new SentenceVectorCache(2);
    cache.set('a', [1]);
    cache.set('b', [2]);
    expect(cache.get('a')).toEqual([1]); // a is now the most recent
    cache.set('c', [3]);
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toEqual([1]);
    expect(cache.get('c')).toEqual([3]);
    expect(cache.size).toBe(2);
  });
});
