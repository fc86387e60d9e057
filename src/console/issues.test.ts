import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError } from '../shared/api/client.js';
import { fieldErrors } from './issues.js';

const refusal = (...issues: [string, string][]) =>
  new ApiError('invalid_params', 'refused', 400, {
    issues: issues.map(([field, message]) => ({ field, message })),
  });

describe('a refusal shown at its fields', () => {
  const fields = [{ name: 'name' }, { name: 'webhook_url', api: 'destinations' }, { name: 'channel_ids' }];
  it('puts each issue at the field it names, by path, last or first segment, or the API name', () => {
    const r = fieldErrors(
      refusal(
        ['name', 'is required'],
        ['destinations.0.webhook_url', 'must be an http or https URL'],
        ['channel_ids.1', 'no channel c9'],
        ['destinations', 'at least one destination'],
      ),
      fields,
    );
    assert.deepEqual(r.byField, {
      name: 'is required',
      webhook_url: 'must be an http or https URL; at least one destination',
      channel_ids: 'no channel c9',
    });
    assert.match(r.summary ?? '', /^Not saved: name: is required; destinations\.0\.webhook_url: must be/);
  });
  it('leaves other refusals to their message', () => {
    const r = fieldErrors(new ApiError('forbidden', 'no', 403), fields);
    assert.deepEqual(r, { byField: {}, summary: null });
    assert.deepEqual(fieldErrors(new Error('x'), fields), { byField: {}, summary: null });
  });
  it('keeps an issue of no field of the form in the summary only', () => {
    const r = fieldErrors(refusal(['(body)', 'give realm_id or org_id']), fields);
    assert.deepEqual(r.byField, {});
    assert.equal(r.summary, 'Not saved: (body): give realm_id or org_id');
  });
});
