import { Type } from 'typebox';
import { CAPABILITIES, MAX_EXPIRY_S, MIN_EXPIRY_S } from '../app-capabilities.ts';
import { ApplicationIn } from './applications.ts';
import { FeatureFlags, Nullable, StringEnum, Text } from './common.ts';

const SessionId = Text({ minLength: 1, maxLength: 256 });

export const AppPortalAccessIn = Type.Object(
  {
    application: Type.Optional(
      Nullable(
        Type.Object(ApplicationIn.properties, {
          description: 'Made under the uid in the path when no application has it; ignored when one does.',
        }),
      ),
    ),
    capabilities: Type.Optional(
      Nullable(
        Type.Array(StringEnum(CAPABILITIES), {
          uniqueItems: true,
          description:
            'What the token may do (Svix AppPortalCapability); ViewBase is required. ViewBase: read the application, ' +
            'its endpoints (not their secrets or headers), messages, attempts and the event types; ' +
            'ViewEndpointSecret: read secrets; ManageEndpointSecret: read and rotate secrets; CreateAttempts: ' +
            'resend, recover, replay and send examples; ManageEndpoint: create, change, pause and delete endpoints, ' +
            'their headers and secrets; ManageTransformations: nothing (Courier has no transformations). ' +
            'Absent: all of them.',
        }),
      ),
    ),
    expiry: Type.Optional(
      Nullable(
        Type.Integer({
          minimum: MIN_EXPIRY_S,
          maximum: MAX_EXPIRY_S,
          description: 'Seconds the token is valid for: an hour to 7 days, 7 days by default.',
        }),
      ),
    ),
    featureFlags: Type.Optional(
      FeatureFlags(
        'The event types with feature flags this token sees: those with one of these (those without any, every token sees).',
      ),
    ),
    readOnly: Type.Optional(
      Nullable(Type.Boolean({ description: 'Deprecated by Svix: true is capabilities [ViewBase] alone.' })),
    ),
    sessionId: Type.Optional(Nullable(SessionId)),
  },
  { title: 'AppPortalAccessIn' },
);

export const AppPortalAccessOut = Type.Object(
  {
    url: Type.String({
      description:
        "COURIER_APP_PORTAL_URL with the token in it, else this server's app portal page, /portal, with the application and the token after its #.",
    }),
    token: Type.String({ description: "A bearer token for the application's part of the API." }),
  },
  { title: 'AppPortalAccessOut' },
);

export const ApplicationTokenExpireIn = Type.Object(
  {
    expiry: Type.Optional(
      Nullable(
        Type.Integer({
          minimum: 0,
          maximum: MAX_EXPIRY_S,
          description: 'Seconds until the tokens expire; 0 by default.',
        }),
      ),
    ),
    sessionIds: Type.Optional(
      Type.Array(SessionId, {
        maxItems: 1000,
        description:
          'Only the tokens of these sessions; every token of the application when absent or empty.',
      }),
    ),
  },
  { title: 'ApplicationTokenExpireIn' },
);

export const TokenSessionOut = Type.Object(
  {
    kind: StringEnum(['admin', 'application'] as const, {
      description: "admin: the whole API; application: an application's token (app portal access).",
    }),
    appId: Nullable(
      Type.String({ description: "The application's id an application's token opens; null for admin." }),
    ),
    capabilities: Type.Array(StringEnum(CAPABILITIES), {
      description: "What the token may do: an application's token's own, every one for admin.",
    }),
    expiresAt: Nullable(
      Type.String({
        format: 'date-time',
        description: "When an application's token stops working; null for admin.",
      }),
    ),
  },
  { title: 'TokenSessionOut' },
);
