import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiBadRequestResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminPrincipal } from '../common/admin-principal';
import { AdminAuth, CurrentAdmin } from '../../core/common/auth-decorators';
import { InvalidPolicyBody } from './policies.dto';
import { PolicySimulator } from './policy-simulator';
import { BacktestReportView, BacktestRequestDto, SimulateRequestDto, SimulationView } from './simulation.dto';

@ApiTags('policies')
@AdminAuth()
@ApiBadRequestResponse({ description: 'invalid_request (a field) or invalid_policy (the proposed policies)', type: InvalidPolicyBody })
@Controller('admin/policies')
export class PolicySimulationController {
  constructor(private readonly simulator: PolicySimulator) {}

  @Post('simulate')
  @HttpCode(200)
  @ApiOperation({ summary: 'Decide one input on the current or proposed policies, with the trace of every rule tried (nothing is counted or recorded)' })
  @ApiOkResponse({ type: SimulationView })
  simulate(@CurrentAdmin() admin: AdminPrincipal, @Body() request: SimulateRequestDto): Promise<SimulationView> {
    return this.simulator.simulate(admin, request);
  }

  @Post('backtest')
  @HttpCode(200)
  @ApiOperation({ summary: 'Replay the decisions recorded in a period through proposed policies and report every flip' })
  @ApiOkResponse({ type: BacktestReportView })
  backtest(@CurrentAdmin() admin: AdminPrincipal, @Body() request: BacktestRequestDto): Promise<BacktestReportView> {
    return this.simulator.backtest(admin, request);
  }
}
