-- Every new delivery is announced on the channel latchkey_set_deliveries (its payload the stream's id), at
-- commit, to every instance that listens: a long poll wakes when its stream has an event, instead of reading on
-- a timer. Notices with the same payload in one transaction are sent once.
CREATE FUNCTION latchkey_notify_delivery() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('latchkey_set_deliveries', NEW.stream_id);
    RETURN NULL;
END
$$;
CREATE TRIGGER set_deliveries_notify AFTER INSERT ON set_deliveries
    FOR EACH ROW EXECUTE FUNCTION latchkey_notify_delivery();
