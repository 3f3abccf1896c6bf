-- Issue 31, point 3: a click's sub-ids (click.recorded v2), reported per sub-id value
-- (queries/sub-ids.ts). Clicks loaded before carry none: NULL.
ALTER TABLE click_recorded
  ADD COLUMN IF NOT EXISTS sub1 Nullable(String),
  ADD COLUMN IF NOT EXISTS sub2 Nullable(String),
  ADD COLUMN IF NOT EXISTS sub3 Nullable(String),
  ADD COLUMN IF NOT EXISTS sub4 Nullable(String),
  ADD COLUMN IF NOT EXISTS sub5 Nullable(String);

-- The analysts' view of clicks gains the sub-ids (docs/analytics.md); its other columns are unchanged.
CREATE OR REPLACE VIEW analytics.clicks (
  click_id          String COMMENT 'The click id returned by POST /api/v1/track/click',
  program_id        Int64 COMMENT 'The program of the referral link',
  partner_id        Nullable(Int64) COMMENT 'The partner of the referral link (NULL when the partner was deleted)',
  referral_link_id  Int64 COMMENT 'The referral link (aff code) that was clicked',
  clicked_at        DateTime64(6, 'UTC') COMMENT 'When the click was recorded (UTC)',
  is_test           Bool COMMENT 'A test click (additional_data.test_mode): counted nowhere in the dashboard',
  sub1              Nullable(String) COMMENT 'The sub1 query parameter of the clicked URL (at most 100 characters); NULL when absent',
  sub2              Nullable(String) COMMENT 'The sub2 query parameter of the clicked URL; NULL when absent',
  sub3              Nullable(String) COMMENT 'The sub3 query parameter of the clicked URL; NULL when absent',
  sub4              Nullable(String) COMMENT 'The sub4 query parameter of the clicked URL; NULL when absent',
  sub5              Nullable(String) COMMENT 'The sub5 query parameter of the clicked URL; NULL when absent'
) DEFINER = CURRENT_USER SQL SECURITY DEFINER
AS SELECT click_id, program_id, partner_id, referral_link_id, created_at AS clicked_at, test AS is_test, sub1, sub2, sub3, sub4, sub5
     FROM click_recorded FINAL
COMMENT 'One row per click';
