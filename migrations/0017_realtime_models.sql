-- Which realtime speech-to-speech model a configuration uses (JSON section like llm/stt/tts); NULL: none.
ALTER TABLE model_configurations ADD COLUMN realtime TEXT;
