import { Global, Module } from '@nestjs/common';
import { AppConfig } from '../../core/config/app-config';
import { DECISION_TOKENS, DecisionTokenSigner } from '../../core/decision/decision-token';
import { KeyRing } from './key-ring';
import { KeysModule } from './keys.module';

/**
 * The gateway's decision token signer (docs/security.md "Decision tokens"): the key agent tokens
 * are signed with, published at /.well-known/jwks.json. Global, for the proxy and MCP; null when
 * DECISION_TOKENS=false.
 */
@Global()
@Module({
  imports: [KeysModule],
  providers: [
    {
      provide: DECISION_TOKENS,
      inject: [AppConfig, KeyRing],
      useFactory: (config: AppConfig, keys: KeyRing): DecisionTokenSigner | null => (config.decisionTokens ? new DecisionTokenSigner(() => keys.signingKey(), () => config.http.publicUrl) : null),
    },
  ],
  exports: [DECISION_TOKENS],
})
export class DecisionTokensModule {}
