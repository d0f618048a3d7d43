import { ApiProperty } from '@nestjs/swagger';

export class JsonWebKey {
  @ApiProperty({ example: 'OKP' }) kty: string;
  @ApiProperty({ example: 'Ed25519', required: false }) crv?: string;
  @ApiProperty({ required: false }) x?: string;
  @ApiProperty({ required: false }) y?: string;
  @ApiProperty({ description: 'Key id (RFC 7638 thumbprint); matches the `kid` header of tokens' }) kid: string;
  @ApiProperty({ example: 'EdDSA' }) alg: string;
  @ApiProperty({ example: 'sig' }) use: string;
}

export class JwksResponse {
  @ApiProperty({ type: [JsonWebKey] })
  keys: object[];
}

/** Tiers as the identity description names them (docs/policies.md "Trust tiers"). */
