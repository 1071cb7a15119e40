import { readFileSync } from 'node:fs';
import path from 'node:path';
import { alignSentences, sentenceUnits } from './align';
import {
  ANSWERABILITY_MODEL,
  answerType,
  answerTypeMatch,
  CONFIDENT_ANSWER,
  decideAnswerability,
  linearDecision,
  MIN_ANSWER_COVERAGE,
  plattPredict,
} from './answerability';
import type { PassageInput } from './types';

const VECTORS = path.resolve(__dirname, '../models/answerability/test-vectors.json');

describe('answerability model (parameters trained with scikit-learn, evaluated in TypeScript)', () => {
  const vectors = JSON.parse(readFileSync(VECTORS, 'utf8'));

  for (const variant of ['semantic', 'lexical'] as const) {
    it(`reproduces scikit-learn's sentence probabilities and calibrated confidences (${variant})`, () => {
      const p = ANSWERABILITY_MODEL[variant];
      const v = vectors[variant];
      expect(v.sentence.length).toBeGreaterThan(10);
      for (const s of v.sentence) {
        const z = linearDecision(p.sentence, s.x);
        expect(z).toBeCloseTo(s.decision, 9);
        expect(1 / (1 + Math.exp(-z))).toBeCloseTo(s.probability, 9);
      }
      for (const q of v.question) {
        const z = linearDecision(p.question, q.x);
        expect(z).toBeCloseTo(q.decision, 9);
        expect(plattPredict(p.calibration, z)).toBeCloseTo(q.calibrated, 9);
      }
      expect(p.threshold).toBeGreaterThan(0);
      expect(p.threshold).toBeLessThan(1);
    });
  }

  it('was trained with the coverage floor the service applies', () => {
    expect(ANSWERABILITY_MODEL.semantic.min_answer_coverage).toBe(MIN_ANSWER_COVERAGE);
    expect(ANSWERABILITY_MODEL.lexical.min_answer_coverage).toBe(MIN_ANSWER_COVERAGE);
  });

  it('calibrates by Platt scaling: monotone in the decision value, 0.5 where a·v + b = 0', () => {
    const cal = { a: 2, b: -1 };
    expect(plattPredict(cal, 0.5)).toBeCloseTo(0.5, 12);
    expect(plattPredict(cal, 1)).toBeCloseTo(1 / (1 + Math.exp(-1)), 12);
    expect(plattPredict(cal, -3)).toBeLessThan(plattPredict(cal, -2));
  });
});

describe('answer types', () => {
  it('reads what a question asks for from its wh-words', () => {
    expect(answerType('When did the Normans conquer England?')).toBe('time');
    expect(answerType('In what year was the treaty signed?')).toBe('time');
    expect(answerType('How many students attend Harvard?')).toBe('quantity');
    expect(answerType('What percentage of the vote did he get?')).toBe('quantity');
    expect(answerType('Who wrote the Declaration?')).toBe('person');
    expect(answerType('Where is the headquarters?')).toBe('place');
    expect(answerType('How often must a scaffold be inspected?')).toBe('frequency');
    expect(answerType('Why is the sky blue?')).toBe('other');
  });

  it('matches a sentence only on an item of that type the question does not already carry', () => {
    expect(answerTypeMatch('time', 'When was the dam built?', 'The dam was completed in 1936.')).toBe(1);
    expect(answerTypeMatch('time', 'What happened in 1936?', 'The dam was completed in 1936.')).toBe(0);
    expect(answerTypeMatch('quantity', 'How many workers died?', 'Several workers died during construction.')).toBe(0);
    expect(answerTypeMatch('quantity', 'How many workers died?', 'Ninety-six workers died during construction.')).toBe(1);
    expect(answerTypeMatch('quantity', 'How many workers died?', 'About 96 workers died during construction.')).toBe(1);
    expect(answerTypeMatch('person', 'Who designed the dam?', 'The dam was designed by Gordon Kaufmann.')).toBe(1);
    expect(answerTypeMatch('other', 'Why was it built?', 'It was built in 1936 by Kaufmann.')).toBe(0);
    expect(answerTypeMatch('frequency', 'How often is it inspected?', 'It is inspected before each work shift.')).toBe(1);
    expect(answerTypeMatch('frequency', 'How often is it inspected?', 'A competent person inspects it.')).toBe(0);
  });
});

describe('coverage floor', () => {
  const passage = (text: string): PassageInput => ({
    chunkId: 'c1',
    documentId: 'd1',
    fileName: 'heat.html',
    text,
    startPage: null,
    endPage: null,
    pageSpans: [],
    score: 1,
  });
  const HEAT = passage(
    'Stay Well Hydrated. Water should be clean, less than 15°C (59°F), and made accessible near the work area. ' +
      'Individual, not communal, drinking cups should be provided. Generally, fluid intake should not exceed 6 cups per hour.',
  );
  const decide = (question: string) => {
    const alignments = alignSentences(question, [HEAT], sentenceUnits([HEAT], { whole: true }));
    return decideAnswerability(question, [HEAT], alignments, null, ANSWERABILITY_MODEL.lexical, 'lexical');
  };

  it('declines a question whose content the passages barely hold, though they share a word with it', () => {
    // "water" is in the passage; "tire", "pressure", "mountain", "bike", "recommended" are not.
    const d = decide('What is the recommended water pressure for a mountain bike tire?');
    expect(d.ranked.some((r) => r.alignment.coverage > 0)).toBe(true);
    expect(Math.max(...d.ranked.map((r) => r.alignment.passageCoverage))).toBeLessThan(MIN_ANSWER_COVERAGE);
    expect(d.answerable).toBe(false);
    expect(d.floor).toBe(true);
    expect(d.confidence).toBeLessThan(CONFIDENT_ANSWER);
  });

  it('answers a question the passage covers', () => {
    const d = decide('What is the maximum fluid intake per hour?');
    expect(d.floor).toBeUndefined();
    expect(d.answerable).toBe(true);
    expect(d.ranked[0].alignment.unit.text).toBe('Generally, fluid intake should not exceed 6 cups per hour.');
  });
});
