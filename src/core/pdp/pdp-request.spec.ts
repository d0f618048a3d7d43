import { BodySchema, CHECK_REQUEST, openApiSchemaOf, pdpRequestFromCheck, pdpRequestFromJson, POLICY_REQUEST_JSON } from './pdp-request';

const SAMPLE: Record<string, unknown> = { text: 'x', object: { a: 1 } };

/** A body giving every field its schema defines, each with a value of its kind. */
function everyField(schema: BodySchema): Record<string, unknown> {
  return Object.fromEntries(Object.entries(schema.fields).map(([name, field]) => [name, name === 'sessionId' ? 's-1' : SAMPLE[field.kind]]));
}

describe('PDP request bodies: one schema for the parser and the OpenAPI document', () => {
  it.each<[string, BodySchema, (body: unknown) => unknown]>([
    ['/v1/check', CHECK_REQUEST, pdpRequestFromCheck],
    ['PolicyRequest JSON', POLICY_REQUEST_JSON, pdpRequestFromJson],
  ])('%s: the parser takes every documented field, requires the documented ones and refuses any other', (_route, schema, parse) => {
    const document = openApiSchemaOf(schema) as { properties: Record<string, { type: string }>; required: string[]; additionalProperties: boolean };
    expect(Object.keys(document.properties)).toEqual(Object.keys(schema.fields));
    expect(() => parse(everyField(schema))).not.toThrow();
    for (const name of document.required) {
      const { [name]: _left, ...without } = everyField(schema);
      expect(() => parse(without)).toThrow(`${name} is required`);
    }
    for (const [name, property] of Object.entries(document.properties)) {
      expect(() => parse({ ...everyField(schema), [name]: property.type === 'string' ? 5 : 'text' })).toThrow(`${name} must be`);
    }
    expect(document.additionalProperties).toBe(false);
    expect(() => parse({ ...everyField(schema), extra: 1 })).toThrow(`unknown field extra in ${schema.what}`);
  });

  it('takes the proto’s snake_case names in PolicyRequest JSON', () => {
    expect(pdpRequestFromJson({ agent_id: 'agent_1', action: 'read:x', trust_tier: 'standard', session_id: 's-1' })).toMatchObject({ agentId: 'agent_1', trustTier: 'standard', sessionId: 's-1' });
  });

  it('checks /v1/check’s plugin and function before the agent, as it always did', () => {
    expect(() => pdpRequestFromCheck({})).toThrow('plugin is required');
  });
});
