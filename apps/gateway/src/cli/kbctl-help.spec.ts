import { helpFor, runKbctl } from './kbctl';

// `kbctl --help` / `kbctl <command> --help`: answered before any database is opened.
describe('kbctl help', () => {
  it('is not asked by an ordinary command', () => {
    expect(helpFor(['org', 'list', '--json'])).toBeNull();
    expect(helpFor(['key', 'create', '--org', 'x', '--name', 'help'])).toBeNull();
  });

  it('lists every command, organizations and keys first, for --help, -h, help, or no command', () => {
    for (const argv of [['--help'], ['-h'], ['help'], [], ['--json']]) {
      const help = helpFor(argv)!;
      expect(help).not.toBeNull();
      const lines = help.text.split('\n').filter((l) => l.startsWith('  ') && !l.startsWith('  --'));
      expect(lines.map((l) => l.trim().split(/\s+/).slice(0, 2).join(' '))).toEqual([
        'org create',
        'org list',
        'org quota',
        'org safety',
        'key create',
        'key list',
        'key revoke',
        'safety load',
        'reindex (re-embed',
      ]);
      expect(help.text).toContain('--json');
      expect(help.text).toContain('DATABASE_URL');
    }
  });

  it('explains one command: its usage line and what it prints', () => {
    for (const argv of [
      ['org', 'list', '--help'],
      ['help', 'org', 'list'],
      ['org', 'list', '-h', '--json'],
    ]) {
      const help = helpFor(argv)!;
      expect(help.text.split('\n')[0]).toBe('Usage: kbctl org list [--json]');
      expect(help.text).toContain('active_keys');
      expect(help.json.commands).toEqual([expect.objectContaining({ name: 'org list', usage: 'kbctl org list' })]);
    }
    expect(helpFor(['key', 'create', '--help'])!.text).toContain('--rate-limit N');
    expect(helpFor(['safety', 'load', 'some/folder', '--help'])!.text).toContain('--prune');
  });

  it('shows the commands of a group for `kbctl key --help`', () => {
    const help = helpFor(['key', '--help'])!;
    expect((help.json.commands as { name: string }[]).map((c) => c.name)).toEqual(['key create', 'key list', 'key revoke']);
  });

  it('an unknown command is still a validation error naming the usage', async () => {
    await expect(runKbctl(['org', 'frobnicate'], {} as never)).rejects.toMatchObject({
      code: 'VALIDATION_ERROR',
      message: expect.stringContaining('org list'),
    });
  });
});
