-- The rates changelog as landed: +I / -U / +U / -D events per currency.
select op, currency, conversion_rate, update_time from landed_rates
