// The Debian Policy Manual workload shared by the stack benchmarks (bench:e2e, bench:chat): the
// 193-page PDF of ../shared/corpus and questions its text answers.
import path from 'node:path';
import { ROOT } from './bootstrap.mjs';

/** Path of the Debian Policy Manual 4.6.2.0 PDF (193 pages) in ../shared/corpus. */
export const DEBIAN_POLICY_PDF = path.join(ROOT, '../shared/corpus/pdf/debian-policy-4.6.2.0.pdf');

/** Questions the Debian Policy Manual answers (written for the benchmarks; not tuned on). */
export const DEBIAN_POLICY_QUESTIONS = [
  'What must the Maintainer control field contain?',
  'When must a package declare a dependency on another package?',
  'Where should configuration files be installed?',
  'What is the purpose of the debian/changelog file?',
  'Which priority levels can a package have?',
  'How must shared libraries be packaged?',
  'What are the requirements for init scripts?',
  'Where must documentation be installed?',
];
