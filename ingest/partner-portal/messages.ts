/**
 * The partner program's own wording (issue 31; all ours: the spec gives none) for applications,
 * owners' decisions on partners, portal links and the partner API.
 */
export const PM = {
  apply: {
    programId: 'program_id must be a positive integer', // ours
    name: 'name is required and must be a string of 1 to 200 characters', // ours
    email: 'email must be a valid email address of at most 254 characters', // ours
    website: 'website must be an http or https URL of at most 500 characters', // ours
    message: 'message must be a string of at most 2000 characters', // ours
    notFound: 'This program does not take applications', // ours
    status: 'status must be one of: pending, approved, rejected, banned, removed', // ours
    duplicate: 'An application with this email already exists for this program: the brand will review it', // ours
  },
  decision: {
    ownerOnly: 'Only a workspace owner can approve, reject or ban partners and make their portal sign-in links', // ours
    notFound: 'Partner not found in this program', // ours
    conflict: (status: string, decision: string) => `A ${status} partner cannot be ${decision === 'approve' ? 'approved' : decision === 'reject' ? 'rejected' : 'banned'}`, // ours
    portalNotApproved: (status: string) => `A portal link is made only for an approved partner; this partner is ${status}`, // ours
  },
  portal: {
    sessionRequired: 'A partner portal session is required: open the sign-in link the brand sent you', // ours
    programNotFound: 'Program not found', // ours
    programId: 'program_id must be a positive integer', // ours
    period: 'period must be a month such as 2026-01', // ours
    limit: 'limit must be an integer from 1 to 100', // ours
    landingUrl: "landing_url must be an http or https page of the program's site", // ours
    sub: (n: number) => `sub${n} must be a string of at most 100 characters`, // ours
    method: 'method must be paypal, wise or manual', // ours
    payoutEmail: 'email must be a valid email address of at most 254 characters', // ours
    wiseName: 'name must be the account holder name, 1 to 200 characters', // ours
    receiverType: 'receiver_type must be PERSON or INSTITUTION', // ours
    note: 'note must be a string of at most 500 characters', // ours
    failed: 'Internal server error', // ours
  },
} as const;
