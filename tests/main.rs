mod golden;
