/**
 * The renderer's only door to code under electron/ beyond the api's schemas and types (electron/api/*.ts): the
 * renderer imports engine and api helpers from here and nowhere else. Everything re-exported here must run in a
 * sandboxed page: pure functions and constants, with no Node or Electron imports, direct or indirect — plus the
 * api's Node-free RPC client, which the browser mode needs for its WebSocket.
 */
export { DEFAULT_REPEATS } from '../engine/methods/limits'
export { METHOD_GROUPS, type MethodGroup } from '../engine/methods/groups'
export { parseSettingText, runSetting, settingDefault, settingHelp, defaultText, type RunSetting, type RunSettingKey } from '../engine/settings/run-settings'
export { bestGamma, speedupAt } from '../engine/theory/measured'
export { calibrationInWords, calibrationNote, describeRunThreads, describeThreadPlan, howChosen, timingsText } from './thread-summary'
export { RpcClient } from './rpc-client'
export { describeLoadProgress } from './models'
export { nativeBackendInWords } from './app'
