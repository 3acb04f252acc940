/**
 * The uids of the operator application, whose endpoints receive operational events, and of the
 * endpoint COURIER_OPERATOR_WEBHOOK_URL makes: a module of its own, so that the CLI names them
 * without loading the relay.
 */
export const OPERATOR_APP_UID = 'courier-operator';
export const OPERATOR_ENDPOINT_UID = 'operator';
