import { requirementLabel } from './format';

describe('requirementLabel', () => {
  it('shows the reference and the title a requirement was sent with', () => {
    expect(requirementLabel({ ref: '164.312(a)(2)(iii)', title: 'Automatic logoff' })).toBe('164.312(a)(2)(iii) · Automatic logoff');
    // The CLI sends a CSV's columns under their header names; a number is a reference too.
    expect(requirementLabel({ ref: 12, Title: ' Information\n backup ' })).toBe('12 · Information backup');
    expect(requirementLabel({ title: 'Automatic logoff', owner: 'IT' })).toBe('Automatic logoff');
    expect(requirementLabel({ ref: 'A.8.13' })).toBe('A.8.13');
  });

  it('is null without either', () => {
    expect(requirementLabel(null)).toBeNull();
    expect(requirementLabel({ clause: '4.2.1', ref: { id: 1 }, title: 3 })).toBeNull();
    expect(requirementLabel({ ref: ' ', title: '' })).toBeNull();
  });
});
