import type { Command, Option } from 'commander';

// Shell completion scripts, generated from the commander command tree of `kb` (commander has no
// completion support of its own): every command path, its subcommands, its options, the choices of
// options that have them. Static scripts: completing never runs `kb` (no Node start per <Tab>, no
// API call). Each shell gets the same small engine: walk the words typed so far to the deepest
// command (skipping the value of an option that takes one), then offer that command's
// subcommands, or its options after "-", or an option's choices, or files.

/** The shells `kb completion` writes a script for. */
export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

interface Opt {
  long?: string;
  short?: string;
  description: string;
  takesValue: boolean;
  /** Its value is a file (the placeholder names one: `<file>`). */
  file: boolean;
  choices?: readonly string[];
}

interface Node {
  /** `''` for `kb` itself, `'docs list'`… */
  path: string;
  subcommands: Array<{ name: string; description: string }>;
  /** This command's own options (the globals are separate). */
  options: Opt[];
  /** The choices of its first argument (`kb completion <shell>`), offered instead of files. */
  argChoices: readonly string[];
}

const firstLine = (text: string) => text.split('\n')[0].trim();

function optOf(o: Option): Opt {
  const placeholder = /[<[]([^>\]]+)[>\]]/.exec(o.flags)?.[1] ?? '';
  return {
    long: o.long ?? undefined,
    short: o.short ?? undefined,
    description: firstLine(o.description ?? ''),
    takesValue: o.required || o.optional,
    file: /file|path|dir/i.test(placeholder),
    choices: o.argChoices,
  };
}

const HELP: Opt = { long: '--help', short: '-h', description: 'display help for command', takesValue: false, file: false };

/** The command tree of `program`: its nodes (root first) and the root's options, which every command accepts. */
function tree(program: Command): { nodes: Node[]; globals: Opt[] } {
  const globals = program.options.filter((o) => !o.hidden && o.long !== '--version').map(optOf);
  const nodes: Node[] = [];
  const walk = (cmd: Command, path: string) => {
    const visible = cmd.commands.filter((c) => !(c as unknown as { _hidden?: boolean })._hidden);
    nodes.push({
      path,
      subcommands: visible.map((c) => ({ name: c.name(), description: firstLine(c.description()) })),
      argChoices: cmd.registeredArguments[0]?.argChoices ?? [],
      options:
        path === '' ? [...program.options.filter((o) => o.long === '--version').map(optOf), HELP] : [...cmd.options.filter((o) => !o.hidden).map(optOf), HELP],
    });
    for (const c of visible) walk(c, path ? `${path} ${c.name()}` : c.name());
  };
  walk(program, '');
  return { nodes, globals };
}

const flags = (o: Opt) => [o.long, o.short].filter((f): f is string => !!f);
/** POSIX shell single quotes (bash and zsh). */
const sq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
/** fish single quotes (backslash and quote escaped). */
const fq = (s: string) => `'${s.replace(/[\\']/g, '\\$&')}'`;
/** A `_describe` item of zsh: `name:description`, colons of the name escaped. */
const zitem = (name: string, description: string) => sq(`${name.replace(/:/g, '\\:')}:${description}`);

/** A case pattern: `<path>|<word>` literally, or `*|<word>` (any path) for a global option. */
interface Pattern {
  any: boolean;
  text: string;
}
/** A pattern in bash/zsh `case`. */
const posix = (p: Pattern) => `${p.any ? '*' : ''}${sq(p.text)}`;
/** A pattern in fish `switch`: a quoted string is literal, so the wildcard stays outside the quotes. */
const fishPattern = (p: Pattern) => `${p.any ? '\\*' : ''}${fq(p.text)}`;

/** Patterns of the options that take a value (the word after them is a value, not a command). */
function valuePatterns(nodes: Node[], globals: Opt[], pick: (o: Opt) => boolean = () => true): Pattern[] {
  const out: Pattern[] = [];
  for (const o of globals.filter((g) => g.takesValue && pick(g))) for (const f of flags(o)) out.push({ any: true, text: `|${f}` });
  for (const n of nodes)
    for (const o of n.options.filter((x) => x.takesValue && pick(x))) for (const f of flags(o)) out.push({ any: false, text: `${n.path}|${f}` });
  return out;
}

/** Choices of an option (by path), for the value completion. */
function choiceCases(nodes: Node[], globals: Opt[]): Array<{ patterns: Pattern[]; choices: readonly string[] }> {
  const out: Array<{ patterns: Pattern[]; choices: readonly string[] }> = [];
  for (const o of globals.filter((g) => g.choices)) out.push({ patterns: flags(o).map((f) => ({ any: true, text: `|${f}` })), choices: o.choices! });
  for (const n of nodes)
    for (const o of n.options.filter((x) => x.choices))
      out.push({ patterns: flags(o).map((f) => ({ any: false, text: `${n.path}|${f}` })), choices: o.choices! });
  return out;
}

/** Patterns of the words that enter a subcommand. */
const transitions = (nodes: Node[]): Pattern[] => nodes.flatMap((n) => n.subcommands.map((s) => ({ any: false, text: `${n.path}|${s.name}` })));

function bash(program: Command): string {
  const { nodes, globals } = tree(program);
  const globalFlags = globals.flatMap(flags);
  const lines = [
    '# bash completion for kb (generated by `kb completion bash`).',
    '# Install: kb completion bash > ~/.local/share/bash-completion/completions/kb',
    "#      or: echo 'source <(kb completion bash)' >> ~/.bashrc",
    '_kb_completion() {',
    '  local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" cmdpath="" word i skip=0 subs opts',
    '  for ((i = 1; i < COMP_CWORD; i++)); do',
    '    word="${COMP_WORDS[i]}"',
    '    if ((skip)); then skip=0; continue; fi',
    '    case "$cmdpath|$word" in',
    `      ${transitions(nodes).map(posix).join('|')}) cmdpath="\${cmdpath:+$cmdpath }$word" ;;`,
    `      ${valuePatterns(nodes, globals).map(posix).join('|')}) skip=1 ;;`,
    '    esac',
    '  done',
    '  case "$cmdpath|$prev" in',
    ...choiceCases(nodes, globals).map(
      (c) => `    ${c.patterns.map(posix).join('|')}) COMPREPLY=($(compgen -W ${sq(c.choices.join(' '))} -- "$cur")); return ;;`,
    ),
    // Any other option value: nothing of ours (readline's file names, by -o default).
    `    ${valuePatterns(nodes, globals).map(posix).join('|')}) COMPREPLY=(); return ;;`,
    '  esac',
    '  case "$cmdpath" in',
    ...nodes.map(
      (n) =>
        `    ${sq(n.path)}) subs=${sq([...n.subcommands.map((s) => s.name), ...n.argChoices].join(' '))}; opts=${sq([...n.options.flatMap(flags), ...globalFlags].join(' '))} ;;`,
    ),
    '  esac',
    '  if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "$opts" -- "$cur"))',
    '  elif [[ -n "$subs" ]]; then COMPREPLY=($(compgen -W "$subs" -- "$cur"))',
    '  else COMPREPLY=(); fi',
    '}',
    'complete -o bashdefault -o default -F _kb_completion kb',
    '',
  ];
  return lines.join('\n');
}

function zsh(program: Command): string {
  const { nodes, globals } = tree(program);
  const describe = (o: Opt) => flags(o).map((f) => zitem(f, o.description));
  const fileValues = valuePatterns(nodes, globals, (o) => o.file).map(posix);
  const otherValues = valuePatterns(nodes, globals, (o) => !o.file).map(posix);
  const lines = [
    '#compdef kb',
    '# zsh completion for kb (generated by `kb completion zsh`).',
    '# Install: kb completion zsh > "${fpath[1]}/_kb"   (a folder of your $fpath; then restart zsh)',
    "#      or: echo 'source <(kb completion zsh)' >> ~/.zshrc   (after compinit)",
    '_kb() {',
    '  local cmdpath="" word cur prev',
    '  local -i i skip=0',
    '  local -a subs opts',
    '  for ((i = 2; i < CURRENT; i++)); do',
    '    word=${words[i]}',
    '    if ((skip)); then skip=0; continue; fi',
    '    case "$cmdpath|$word" in',
    `      (${transitions(nodes).map(posix).join('|')}) cmdpath="\${cmdpath:+$cmdpath }$word" ;;`,
    `      (${valuePatterns(nodes, globals).map(posix).join('|')}) skip=1 ;;`,
    '    esac',
    '  done',
    '  cur=${words[CURRENT]} prev=${words[CURRENT-1]}',
    '  case "$cmdpath|$prev" in',
    ...choiceCases(nodes, globals).map((c) => `    (${c.patterns.map(posix).join('|')}) compadd -- ${c.choices.map(sq).join(' ')}; return ;;`),
    ...(fileValues.length ? [`    (${fileValues.join('|')}) _files; return ;;`] : []),
    ...(otherValues.length ? [`    (${otherValues.join('|')}) return 1 ;;`] : []),
    '  esac',
    '  case "$cmdpath" in',
    ...nodes.map(
      (n) =>
        `    (${sq(n.path)}) subs=(${[...n.subcommands.map((s) => zitem(s.name, s.description)), ...n.argChoices.map((c) => zitem(c, ''))].join(' ')}); opts=(${[...n.options, ...globals].flatMap(describe).join(' ')}) ;;`,
    ),
    '  esac',
    "  if [[ $cur == -* ]]; then _describe -t options 'option' opts",
    "  elif (( ${#subs} )); then _describe -t commands 'command' subs",
    '  else _files; fi',
    '}',
    'if [[ "${funcstack[1]}" == _kb ]]; then _kb "$@"; else compdef _kb kb; fi',
    '',
  ];
  return lines.join('\n');
}

function fish(program: Command): string {
  const { nodes, globals } = tree(program);
  const option = (o: Opt, condition: string | null) => {
    const parts = ['complete -c kb'];
    if (condition !== null) parts.push(`-n ${fq(`__kb_at ${fq(condition)}`)}`);
    if (o.long) parts.push(`-l ${o.long.slice(2)}`);
    if (o.short) parts.push(`-s ${o.short.slice(1)}`);
    if (o.choices) parts.push(`-x -a ${fq(o.choices.join(' '))}`);
    else if (o.takesValue) parts.push(o.file ? '-r -F' : '-x');
    parts.push(`-d ${fq(o.description)}`);
    return parts.join(' ');
  };
  const lines = [
    '# fish completion for kb (generated by `kb completion fish`).',
    '# Install: kb completion fish > ~/.config/fish/completions/kb.fish',
    'function __kb_cmdpath',
    '    set -l tokens (commandline -opc)',
    '    set -e tokens[1]',
    "    set -l cmdpath ''",
    '    set -l skip 0',
    '    for word in $tokens',
    '        if test $skip -eq 1',
    '            set skip 0',
    '            continue',
    '        end',
    '        switch "$cmdpath|$word"',
    `            case ${transitions(nodes).map(fishPattern).join(' ')}`,
    '                set cmdpath (string trim -- "$cmdpath $word")',
    `            case ${valuePatterns(nodes, globals).map(fishPattern).join(' ')}`,
    '                set skip 1',
    '        end',
    '    end',
    "    printf '%s\\n' $cmdpath",
    'end',
    'function __kb_at',
    '    set -l at (__kb_cmdpath)',
    '    test "$at" = "$argv[1]"',
    'end',
    ...globals.map((o) => option(o, null)),
    ...nodes.flatMap((n) => [
      ...n.subcommands.map((s) => `complete -c kb -n ${fq(`__kb_at ${fq(n.path)}`)} -f -a ${fq(s.name)} -d ${fq(s.description)}`),
      ...n.argChoices.map((c) => `complete -c kb -n ${fq(`__kb_at ${fq(n.path)}`)} -f -a ${fq(c)}`),
      ...n.options.map((o) => option(o, n.path)),
    ]),
    '',
  ];
  return lines.join('\n');
}

/** The completion script of `shell` for the commands of `program` (the `kb` root command). */
export function completionScript(program: Command, shell: Shell): string {
  return { bash, zsh, fish }[shell](program);
}

/** The install instructions shown by `kb completion --help`. */
export const COMPLETION_HELP = `
Install (then open a new shell):
  bash  kb completion bash > ~/.local/share/bash-completion/completions/kb
        (or add to ~/.bashrc: source <(kb completion bash))
  zsh   kb completion zsh > "\${fpath[1]}/_kb"
        (or add to ~/.zshrc, after compinit: source <(kb completion zsh))
  fish  kb completion fish > ~/.config/fish/completions/kb.fish`;
