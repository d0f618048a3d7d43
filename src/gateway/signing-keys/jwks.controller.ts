import { Controller, Get, Header } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Public } from '../../core/common/auth-decorators';
import { JwksResponse } from './keys.dto';
import { KeyRing } from './key-ring';

@ApiTags('identity')
@Controller('.well-known')
export class JwksController {
  constructor(private readonly keyRing: KeyRing) {}

  @Get('jwks.json')
  @Public()
  @Header('Cache-Control', 'public, max-age=300')
  @ApiOperation({ summary: 'Public keys that verify agent tokens and sidecar bundles (JWKS, RFC 7517)' })
  @ApiOkResponse({ type: JwksResponse })
  async jwks(): Promise<JwksResponse> {
    return { keys: await this.keyRing.publishedKeys() };
  }
}
