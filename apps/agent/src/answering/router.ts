import { AppError, ErrorCode } from '@kb/common';
import { analyze } from '@kb/text';

export type AgentName = 'general' | 'project' | 'safety';

/**
 * Weighted lexicon of construction / workplace-safety vocabulary (stems of `analyze`). Weight 3:
 * terms that on their own mark a safety question (the hazard and control vocabulary of OSHA 29 CFR
 * 1926 subparts E, K, L, M, P, X and of the NIOSH construction topics); weight 2: strong context
 * (equipment and site words that are usually about safety); weight 1: words that only add to other
 * evidence. Multi-word phrases score on top of their words.
 */
const TERMS: Record<string, number> = Object.fromEntries(
  [
    [
      3,
      'osha niosh safety safe hazard hazardous injury injuries fatal fatality guardrail guardrails harness harnesses lanyard lanyards fall falls scaffold scaffolds scaffolding ladder ladders excavation excavations trench trenches trenching shoring respirator respirators ppe lockout tagout hardhat helmet helmets goggles earplugs gfci electrocution asbestos silica toxic flammable extinguisher extinguishers firefighting evacuation caught-in struck-by hi-vis',
    ],
    [
      2,
      'protective protection accident accidents incident incidents emergency fire fires gloves boots vest vests glasses hearing noise dust fumes welding crane cranes rigging hoist forklift forklifts anchorage anchor debris collapse cave-in cave-ins confined shock burn burns first-aid aid toolbox guard guards barricade barricades warning ground-fault grounding energized voltage chemical chemicals exposure ventilation',
    ],
    [
      1,
      'construction site worker workers workplace employer employee employees crew contractor inspection inspect training height heights edge edges roof roofing opening openings hole holes floor platform equipment tool tools power wear worn signage sign signs',
    ],
  ].flatMap(([w, words]) => (words as string).split(/\s+/).map((t) => [analyze(t.replace(/-/g, ' ')).join(' '), w as number])),
);

const PHRASES: [RegExp, number][] = [
  [/\bfall (?:protection|arrest|restraint)\b/i, 4],
  [/\bpersonal protective equipment\b/i, 4],
  [/\bhard hats?\b/i, 3],
  [/\bsafety (?:glasses|boots|shoes|net|nets|data sheets?|plan|officer|meeting)\b/i, 3],
  [/\bhot work\b/i, 3],
  [/\bconfined spaces?\b/i, 3],
  [/\bprotective systems?\b/i, 3],
  [/\b(?:lock[- ]?out|tag[- ]?out)\b/i, 3],
  [/\bground[- ]fault\b/i, 3],
  [/\bleading edges?\b/i, 2],
  [/\bfire (?:watch|extinguishers?|prevention)\b/i, 3],
];

/** Score at which a conversation counts as a construction/workplace-safety conversation. */
export const SAFETY_THRESHOLD = 3;

/** The lexicon classifier's verdict on one text. */
export interface SafetyClassification {
  /** Sum of the weights of the safety terms and phrases found (each distinct term counted once). */
  score: number;
  isSafety: boolean;
  /** The distinct matched terms (stems) and phrases, for logs and tests. */
  matched: string[];
}

/**
 * Scored lexicon classifier for "is this about construction or workplace safety?": sums the
 * weights of the distinct safety terms (after stemming, so "ladders" = "ladder") and phrases
 * of `text`; at or above {@link SAFETY_THRESHOLD} the text is a safety text. Deterministic, no model.
 */
export function classifySafety(text: string): SafetyClassification {
  const matched: string[] = [];
  let score = 0;
  const terms = new Set(analyze(text.replace(/-/g, ' ')));
  for (const t of terms) {
    const w = TERMS[t];
    if (w) {
      score += w;
      matched.push(t);
    }
  }
  for (const [re, w] of PHRASES) {
    const m = re.exec(text);
    if (m) {
      score += w;
      matched.push(m[0].toLowerCase());
    }
  }
  return { score, isSafety: score >= SAFETY_THRESHOLD, matched };
}

/**
 * Chooses the agent (decisions.md "Agent"): an explicit chat_type wins (safety needs the Safety
 * Assistant enabled, else AGENT_NOT_ENABLED; project needs project_id, else VALIDATION_ERROR);
 * with chat_type omitted: `safety` when the Safety Assistant is enabled and `isSafety` says the
 * conversation is about construction/workplace safety, else `project` when a project is given,
 * else `general`.
 *
 * @param isSafety the classifier's verdict, asked only when it can change the outcome.
 */
export async function chooseAgent(
  req: { chatType?: string; projectId?: string; safetyAssistantEnabled: boolean },
  isSafety: () => Promise<boolean> | boolean = () => false,
): Promise<AgentName> {
  if (req.chatType === 'safety') {
    if (!req.safetyAssistantEnabled) {
      throw new AppError(ErrorCode.AGENT_NOT_ENABLED, 'The Safety Assistant is not enabled for your organization. Ask your administrator to enable it.');
    }
    return 'safety';
  }
  if (req.chatType === 'project') {
    if (!req.projectId) throw AppError.validation('project_id is required when chat_type is project.');
    return 'project';
  }
  if (req.chatType === 'general') return 'general';
  if (req.chatType) throw AppError.validation('chat_type must be one of general, project, safety.');
  if (req.safetyAssistantEnabled && (await isSafety())) return 'safety';
  return req.projectId ? 'project' : 'general';
}
