import { joinTitle, readRequirement, requirementCore, requirementTitle, requirementWithTitle, specificFrequencies, withoutTitle } from './requirement-language';

describe('readRequirement', () => {
  it.each([
    [
      'Implement policies and procedures to prevent, detect, contain and correct security violations.',
      'Prevent, detect, contain and correct security violations.',
      'Implement policies and procedures to',
    ],
    [
      'Implement electronic procedures that terminate an electronic session after a predetermined time of inactivity.',
      'Terminate an electronic session after a predetermined time of inactivity.',
      'Implement electronic procedures that',
    ],
    ['Procedures for creating, changing, and safeguarding passwords.', 'Creating, changing, and safeguarding passwords.', 'Procedures for'],
    ['The organization shall ensure that visitors are escorted at all times.', 'Visitors are escorted at all times.', 'The organization shall ensure that'],
    ['Ensure that backups are tested at least quarterly.', 'Backups are tested at least quarterly.', 'Ensure that'],
    [
      'Establish and maintain a process to address unauthorized assets on a weekly basis.',
      'Address unauthorized assets on a weekly basis.',
      'Establish and maintain a process to',
    ],
    [
      'Policies and procedures shall be established and maintained to protect data at rest.',
      'Protect data at rest.',
      'Policies and procedures shall be established and maintained to',
    ],
    ['Is there an established process for engaging service providers?', 'An established process for engaging service providers.', 'Is there'],
  ])('%s', (text, core, framing) => {
    const r = readRequirement(text);
    expect(r.core).toBe(core);
    expect(r.framing).toBe(framing);
  });

  it('keeps the specifics the evidence must meet (numbers, frequencies, roles)', () => {
    expect(requirementCore('The contractor shall ensure that a competent person inspects scaffolds before each shift.')).toBe(
      'A competent person inspects scaffolds before each shift.',
    );
    expect(requirementCore('Review and update the inventory bi-annually, or more frequently.')).toBe(
      'Review and update the inventory bi-annually, or more frequently.',
    );
  });

  it('keeps a requirement whose framing is its content whole', () => {
    expect(readRequirement('Implement policies and procedures.').core).toBe('Implement policies and procedures.');
    expect(readRequirement('Hard hats must be worn.').framing).toBeNull();
  });

  it('writes NIST SP 800-53 parameters and emphasis plainly', () => {
    expect(requirementCore('The organization: a. Reviews and updates the access control policy [Assignment: organization-defined frequency].')).toBe(
      'Reviews and updates the access control policy frequency.',
    );
    expect(requirementCore('The information system automatically [Selection: removes; disables] temporary accounts after **72 hours**.')).toBe(
      'The information system automatically removes or disables temporary accounts after 72 hours.',
    );
  });
});

describe('specificFrequencies', () => {
  it('reads adverbs, "every N <period>", "N times a <period>" and "each <period>"; vague ones are not specific', () => {
    expect(specificFrequencies('Access rights must be reviewed at least annually.')).toEqual(['annually']);
    expect(specificFrequencies('Rotate keys every 90 days and test backups once a month.')).toEqual(['every 90 days', 'once a month']);
    expect(specificFrequencies('A competent person inspects scaffolds before each shift.')).toEqual(['each shift']);
    expect(specificFrequencies('Scan every two weeks')).toEqual(['every two weeks']);
    expect(specificFrequencies('Review logs regularly and periodically.')).toEqual([]);
    expect(specificFrequencies('Review the policy at an organization-defined frequency.')).toEqual([]);
  });
});

describe('requirementWithTitle', () => {
  const text = 'Implement electronic procedures that terminate an electronic session after a predetermined time of inactivity.';

  it('joins metadata.title (any case of the key) in front of the text', () => {
    expect(requirementWithTitle(text, { ref: '164.312(a)(2)(iii)', title: 'Automatic logoff' })).toBe(`Automatic logoff: ${text}`);
    // The CLI sends a CSV's other columns under their header names.
    expect(requirementWithTitle(text, { Ref: '164.312(a)(2)(iii)', Title: '  Automatic\n logoff: ' })).toBe(`Automatic logoff: ${text}`);
  });

  it('leaves the text as it is without a usable title, or when the text already starts with it', () => {
    expect(requirementWithTitle(text, null)).toBe(text);
    expect(requirementWithTitle(text, undefined)).toBe(text);
    expect(requirementWithTitle(text, { ref: 'A.8.13' })).toBe(text);
    expect(requirementWithTitle(text, { title: 42 })).toBe(text);
    expect(requirementWithTitle(text, { title: ' . ' })).toBe(text);
    expect(requirementWithTitle(text, { title: 'x'.repeat(201) })).toBe(text);
    expect(requirementWithTitle('Automatic logoff: terminate sessions after inactivity.', { title: 'automatic logoff' })).toBe(
      'Automatic logoff: terminate sessions after inactivity.',
    );
  });
});

describe('requirementTitle and withoutTitle', () => {
  it('give the title that was joined, and the requirement without it', () => {
    expect(requirementTitle({ Title: ' Automatic\n logoff: ' })).toBe('Automatic logoff');
    expect(requirementTitle({ title: 'x'.repeat(201) })).toBeNull();
    expect(requirementTitle(null)).toBeNull();
    const joined = requirementWithTitle('Terminate sessions after inactivity.', { title: 'Automatic logoff' });
    expect(withoutTitle(joined, 'Automatic logoff')).toBe('Terminate sessions after inactivity.');
    // A sub-requirement that does not start with the title, no title, or nothing after it: unchanged.
    expect(withoutTitle('Lock the workstation.', 'Automatic logoff')).toBe('Lock the workstation.');
    expect(withoutTitle(joined, null)).toBe(joined);
    expect(withoutTitle('Automatic logoff: ', 'Automatic logoff')).toBe('Automatic logoff: ');
    // Joining twice changes nothing (eval:controls passes texts already joined).
    expect(joinTitle(joined, 'Automatic logoff')).toBe(joined);
  });
});
