import { AppError } from '@kb/common';
import { claimFor, MarkerFilter } from './markers';
import { isFollowUp, rewriteQuery } from './rewrite';
import { chooseAgent, classifySafety } from './router';

describe('classifySafety (lexicon router)', () => {
  it.each([
    'How far must a ladder extend above the landing?',
    'Do we need guardrails on the scaffold?',
    'What PPE is required when grinding?',
    'How deep can a trench be before shoring is needed?',
    'Is a fall arrest harness required on the roof edge?',
  ])('classifies %p as safety', (q) => expect(classifySafety(q).isSafety).toBe(true));

  it.each([
    'When do we notify customers about a security incident?',
    'What is the refund policy?',
    'Who approves access to production systems?',
    'Summarise the quarterly budget.',
  ])('does not classify %p as safety', (q) => expect(classifySafety(q).isSafety).toBe(false));

  it('scores stems and phrases once each', () => {
    const r = classifySafety('Ladders, ladder, LADDER and personal protective equipment');
    expect(r.matched).toEqual(expect.arrayContaining(['ladder', 'personal protective equipment']));
    expect(r.matched.filter((m) => m === 'ladder')).toHaveLength(1);
  });
});

describe('chooseAgent', () => {
  const safety = async () => true;
  it('explicit chat_type wins; safety needs the assistant enabled', async () => {
    await expect(chooseAgent({ chatType: 'safety', safetyAssistantEnabled: false })).rejects.toMatchObject({ code: 'AGENT_NOT_ENABLED' });
    await expect(chooseAgent({ chatType: 'project', safetyAssistantEnabled: true })).rejects.toBeInstanceOf(AppError);
    expect(await chooseAgent({ chatType: 'general', projectId: 'p', safetyAssistantEnabled: true }, safety)).toBe('general');
  });
  it('omitted: safety when enabled and on topic, else project with a project, else general', async () => {
    expect(await chooseAgent({ safetyAssistantEnabled: true }, safety)).toBe('safety');
    expect(await chooseAgent({ safetyAssistantEnabled: false, projectId: 'p' }, safety)).toBe('project');
    expect(await chooseAgent({ safetyAssistantEnabled: true }, async () => false)).toBe('general');
  });
});

describe('rewriteQuery (deterministic follow-up rewrite)', () => {
  it('keeps a stand-alone question as is', () => {
    expect(rewriteQuery([{ role: 'user', content: 'How wide must a scaffold platform be at minimum?' }])).toBe(
      'How wide must a scaffold platform be at minimum?',
    );
  });
  it('adds the content words of earlier user turns to a follow-up, newest first, without their question wording', () => {
    const q = rewriteQuery([
      { role: 'user', content: 'Tell me about excavations.' },
      { role: 'assistant', content: 'Excavations need protective systems [1].' },
      { role: 'user', content: 'What about trench boxes?' },
      { role: 'assistant', content: 'Trench boxes are shields [1].' },
      { role: 'user', content: 'And how deep can they go?' },
    ]);
    expect(q).toBe('And how deep can they go? trench boxes excavations');
    expect(
      rewriteQuery([
        { role: 'user', content: 'How wide must a scaffold platform be?' },
        { role: 'assistant', content: 'At least 18 inches [1].' },
        { role: 'user', content: 'And how often must it be inspected?' },
      ]),
    ).toBe('And how often must it be inspected? scaffold platform');
  });
  it('detects follow-ups by opener, pronoun or brevity', () => {
    expect(isFollowUp('and the midrail?')).toBe(true);
    expect(isFollowUp('How often is it inspected by the competent person on site?')).toBe(true);
    expect(isFollowUp('How often must a competent person inspect excavations during a shift?')).toBe(false);
  });
});

describe('MarkerFilter', () => {
  it('renumbers valid markers by first use and drops markers of passages not given', () => {
    const f = new MarkerFilter(3);
    const out = f.push('A [3]. B [1][7]. C [3, 2].') + f.flush();
    expect(out).toBe('A [1]. B [2]. C [1][3].');
    expect(f.used).toEqual([3, 1, 2]);
  });
  it('checks markers split across deltas and passes plain brackets through', () => {
    const f = new MarkerFilter(2);
    const parts = ['see [', '2', '] and [x] and [1', '0] and [', '1]', ' end ['];
    const out = parts.map((p) => f.push(p)).join('') + f.flush();
    expect(out).toBe('see [1] and [x] and  and [2] end [');
  });
  it('claimFor returns the sentences carrying a marker', () => {
    expect(claimFor('Rails are 42 inches [1]. Nets are 30 feet [2].', 2)).toBe('Nets are 30 feet.');
  });
});
