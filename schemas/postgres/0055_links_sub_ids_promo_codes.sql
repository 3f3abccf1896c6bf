-- Issue 31, points 3 and 4 (docs/decisions/links-and-promo-codes.md): sub-ids and the client's
-- address on every click, and promo codes.

-- Written by the click's one INSERT (domain/tracking/clicks.ts), in the same statement: no index
-- (the click path's cost, docs/architecture.md "Rules that exist only for speed"). sub1..sub5 are
-- the affiliate_url's query parameters, at most 100 characters each; client_ip is the address the
-- click's rate limit counts (an IPv6 client as its /64), read by the fraud rules.
ALTER TABLE clicks
  ADD COLUMN sub1 text,
  ADD COLUMN sub2 text,
  ADD COLUMN sub3 text,
  ADD COLUMN sub4 text,
  ADD COLUMN sub5 text,
  ADD COLUMN IF NOT EXISTS client_ip inet;

-- A partner's links are listed per partner-program record (GET .../partners/:partnerId/links).
CREATE INDEX referral_links_partner_program ON referral_links (partner_program_id);

-- A promo code of a partner in a program: unique per program ignoring case (lower(code)), and so is
-- the processor's promotion id when given. A sale carrying either attributes a customer with no
-- attribution yet to the partner (record_sale.sql). Disabled codes attribute nothing; a code is
-- never deleted, so the audit log and past attributions keep pointing at it.
CREATE TABLE promo_codes (
  id                      bigserial PRIMARY KEY,
  program_id              bigint NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
  partner_id              bigint NOT NULL REFERENCES partners (id),
  partner_program_id      bigint NOT NULL REFERENCES partner_programs (id),
  code                    text NOT NULL,
  processor_promotion_id  text,
  enabled                 boolean NOT NULL DEFAULT true,
  created_at              timestamptz NOT NULL DEFAULT now(),
  updated_at              timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX promo_codes_program_code ON promo_codes (program_id, lower(code));
CREATE UNIQUE INDEX promo_codes_program_promotion ON promo_codes (program_id, processor_promotion_id) WHERE processor_promotion_id IS NOT NULL;
CREATE INDEX promo_codes_partner ON promo_codes (program_id, partner_id);
